import type { Kysely } from 'kysely';
import { param, prepare } from '@platform/db';
import type { ApiKeyRow, WorkspaceDatabase } from '../db/schema';
import { hashSecret, newKeyPair } from './keys';
import type { Permission } from './permissions';

export interface NewApiKey {
  name: string;
  permissions: Permission[];
  readOnly?: boolean;
  expires?: Date | null;
}

/** Every statement about API keys. */
export function createApiKeysRepository(db: Kysely<WorkspaceDatabase>) {
  /** The credential check of every Kasm operation: compiled once, not built by Kysely per request. */
  const byKey = prepare(
    db,
    db.selectFrom('api_keys').selectAll().where('api_key', '=', param<string>(1)),
    (apiKey: string) => [apiKey],
  );

  return {
    /** The key, read and never written (no last-used stamp): a read stays one statement. */
    async findByKey(apiKey: string): Promise<ApiKeyRow | undefined> {
      return (await byKey(apiKey))[0];
    },

    /** Creates a key; the secret is returned once and only its hash is stored. */
    async create(key: NewApiKey): Promise<{ row: ApiKeyRow; apiKey: string; secret: string }> {
      const { apiKey, secret } = newKeyPair();
      const { salt, hash } = hashSecret(secret);
      const row = await db
        .insertInto('api_keys')
        .values({
          api_key: apiKey,
          secret_salt: salt,
          secret_hash: hash,
          name: key.name,
          permissions: key.permissions,
          read_only: key.readOnly ?? false,
          expires: key.expires ?? null,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      return { row, apiKey, secret };
    },

    /**
     * Creates the configured bootstrap key (Global Admin) when no key has this name, with `secret` or a
     * random one; an existing key is returned as it is, never re-enabled, re-keyed or re-privileged
     * (an operator may have disabled it). Several instances starting at once create it once.
     */
    async ensureBootstrap(
      apiKey: string,
      secret?: string,
    ): Promise<{ created: true; row: ApiKeyRow; secret: string } | { created: false; row: ApiKeyRow }> {
      const plain = secret ?? newKeyPair().secret;
      const { salt, hash } = hashSecret(plain);
      const inserted = await db
        .insertInto('api_keys')
        .values({
          api_key: apiKey,
          name: 'bootstrap',
          secret_salt: salt,
          secret_hash: hash,
          permissions: ['Global Admin'],
        })
        .onConflict((oc) => oc.column('api_key').doNothing())
        .returningAll()
        .executeTakeFirst();
      if (inserted) return { created: true, row: inserted, secret: plain };
      const existing = (await byKey(apiKey))[0];
      if (!existing) throw new Error(`bootstrap key ${apiKey} vanished while it was being created`);
      return { created: false, row: existing };
    },

    list(): Promise<ApiKeyRow[]> {
      return db.selectFrom('api_keys').selectAll().orderBy('created').execute();
    },

    /** True when a key was disabled. */
    async disable(apiKey: string): Promise<boolean> {
      const result = await db
        .updateTable('api_keys')
        .set({ enabled: false })
        .where('api_key', '=', apiKey)
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },
  };
}
