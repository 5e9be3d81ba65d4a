import { sql } from 'kysely';
import { createSecretsRepository, type ServiceSecretsTable } from '../src';
import { migratedTestDatabase, oneTableMigrations, type MigratedTestDatabase } from './support/database';

type Secrets = { service_secrets: ServiceSecretsTable<'signing_key' | 'absent'> };

/** The table as the services' (frozen) migrations make it, with one secret drawn by PostgreSQL. */
const migrations = oneTableMigrations(
  'service_secrets',
  (table) =>
    table
      .addColumn('name', 'text', (c) => c.primaryKey())
      .addColumn('value', 'text', (c) => c.notNull())
      .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`)),
  async (db) => {
    await sql`insert into service_secrets (name, value)
      values ('signing_key', md5(gen_random_uuid()::text))`.execute(db);
  },
);

describe('createSecretsRepository', () => {
  let d: MigratedTestDatabase<Secrets>;
  beforeAll(async () => {
    d = await migratedTestDatabase<Secrets>('svc_secrets', migrations);
  }, 60_000);
  afterAll(async () => {
    await d?.drop();
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
