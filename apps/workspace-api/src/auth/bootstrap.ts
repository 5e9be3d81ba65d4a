import type { FastifyInstance } from 'fastify';
import type { Config } from '../config';
import { secretMatches } from './keys';
import { createApiKeysRepository } from './repository';

/**
 * The configured bootstrap key at start: created when missing (a generated secret is logged once,
 * here, and never stored in plain text); an existing one is left exactly as the operator left it,
 * with a warning when it is disabled or the configured secret is not its own.
 */
export async function ensureBootstrapKey(
  app: FastifyInstance,
  bootstrap: NonNullable<Config['bootstrapKey']>,
): Promise<void> {
  const result = await createApiKeysRepository(app.database.db).ensureBootstrap(
    bootstrap.apiKey,
    bootstrap.secret,
  );
  const apiKey = bootstrap.apiKey;
  if (result.created) {
    if (bootstrap.secret) app.log.info({ apiKey }, 'bootstrap key created (Global Admin)');
    // warn, so a LOG_LEVEL of warn still shows it; it is printed this once only.
    else
      app.log.warn(
        { apiKey, apiKeySecret: result.secret },
        `bootstrap key created (Global Admin) with a generated secret, shown only now: api_key ${apiKey}, api_key_secret ${result.secret}`,
      );
    return;
  }
  const { row } = result;
  if (!row.enabled)
    app.log.warn(
      { apiKey },
      `bootstrap key ${apiKey} is disabled and stays disabled (a restart never re-enables it); use another key, or unset BOOTSTRAP_API_KEY`,
    );
  if (bootstrap.secret && !secretMatches(bootstrap.secret, row.secret_salt, row.secret_hash))
    app.log.warn(
      { apiKey },
      `BOOTSTRAP_API_KEY_SECRET is not the secret of the existing key ${apiKey}, which keeps its own (the secret is set only when the key is created); to change it, create a new key (keys create) and disable this one`,
    );
}
