import { Type } from '@sinclair/typebox';
import { EnvFlag, parseEnv } from '@platform/schema';
import { productionSecretProblem, serviceConfig, serviceEnv } from '@platform/http-kit';
import { passwordHashingConfig, passwordHashingEnv } from '@platform/passwords';

/**
 * Shortest bootstrap secret in any mode: a value this short is a typo or a word, not a secret (16
 * random alphanumerics are ~95 bits; the secrets `keys create` makes are 32). Production asks for 32.
 */
export const MIN_BOOTSTRAP_SECRET_LENGTH = 16;

/** The service's environment, one schema: defaults here are the documented ones. */
export const EnvSchema = Type.Object({
  ...serviceEnv({ port: 8080, schema: 'workspace' }),
  BOOTSTRAP_API_KEY: Type.Optional(
    Type.String({
      pattern: '^[A-Za-z0-9]{1,64}$',
      description: 'A Global Admin key created at start when missing (never re-enabled or changed)',
    }),
  ),
  BOOTSTRAP_API_KEY_SECRET: Type.Optional(
    Type.String({
      minLength: MIN_BOOTSTRAP_SECRET_LENGTH,
      description: "The bootstrap key's secret when it is created; unset: a random one, logged once",
    }),
  ),
  ENFORCE_PASSWORD_RULES_ON_CREATE: EnvFlag(false),
  ...passwordHashingEnv(),
});

export const BODY_LIMIT = 1024 * 1024;

/** The service's configuration: what `loadConfig` makes of `EnvSchema` (each setting described once). */
export type Config = ReturnType<typeof loadConfig>;

/** In production (NODE_ENV, shared by every service: see `serviceEnv`) the bootstrap secret must be unknown. */
export function loadConfig(env: Record<string, string | undefined> = process.env) {
  const e = parseEnv(EnvSchema, env);
  const problems: string[] = [];
  if (e.BOOTSTRAP_API_KEY_SECRET && !e.BOOTSTRAP_API_KEY)
    problems.push('BOOTSTRAP_API_KEY_SECRET: set BOOTSTRAP_API_KEY too (the key this secret belongs to)');
  if (e.NODE_ENV === 'production') {
    const secretProblem = e.BOOTSTRAP_API_KEY_SECRET && productionSecretProblem(e.BOOTSTRAP_API_KEY_SECRET);
    if (secretProblem)
      problems.push(
        `BOOTSTRAP_API_KEY_SECRET: ${secretProblem} (or leave it unset: a random one is logged once)`,
      );
  }
  if (problems.length) throw new Error(`invalid configuration:\n  ${problems.join('\n  ')}`);
  return {
    ...serviceConfig(e),
    /** Created at start when missing; `secret` unset: a random one, logged once. */
    bootstrapKey: e.BOOTSTRAP_API_KEY
      ? { apiKey: e.BOOTSTRAP_API_KEY, secret: e.BOOTSTRAP_API_KEY_SECRET }
      : undefined,
    enforcePasswordRulesOnCreate: e.ENFORCE_PASSWORD_RULES_ON_CREATE,
    /** argon2id cost (OWASP's by default) and how many hashes run or wait at once. */
    argon2: passwordHashingConfig(e),
  };
}
