import { sql, type Kysely, type Migration } from 'kysely';
import {
  createSecretsRepository,
  migrateToLatest,
  openDatabase,
  type Database,
  type ServiceSecretsTable,
} from '../src';
import { testDatabase } from '../src/testing';

type Secrets = { service_secrets: ServiceSecretsTable<'signing_key' | 'absent'> };

/** The table as the services' (frozen) migrations make it, with one secret drawn by PostgreSQL. */
const migrations: Record<string, Migration> = {
  '2026-01-01T0000_service_secrets': {
    up: async (db: Kysely<any>) => {
      await db.schema
        .createTable('service_secrets')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('value', 'text', (c) => c.notNull())
        .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
        .execute();
      await sql`insert into service_secrets (name, value)
        values ('signing_key', md5(gen_random_uuid()::text))`.execute(db);
    },
  },
};

describe('createSecretsRepository', () => {
  let d: Database<Secrets>;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    const s = testDatabase('svc_secrets');
    cleanup = s.cleanup;
    d = await openDatabase<Secrets>(s.config);
    await migrateToLatest(d.db, d.schema, migrations);
  }, 60_000);
  afterAll(async () => {
    await d?.close();
    await cleanup?.();
  });

  test('reads the secret the migration made, the same on every read', async () => {
    const secrets = createSecretsRepository(d.db);
    const key = await secrets.read('signing_key');
    expect(key).toMatch(/^[0-9a-f]{32}$/);
    expect(await createSecretsRepository(d.db).read('signing_key')).toBe(key);
  });

  test('a secret the migrations did not make is an error, not an empty key', async () => {
    await expect(createSecretsRepository(d.db).read('absent')).rejects.toThrow(/no result/i);
  });
});
