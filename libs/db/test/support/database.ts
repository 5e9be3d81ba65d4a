import type { CreateTableBuilder, Kysely, Migration } from 'kysely';
import {
  migrateToLatest,
  openDatabase,
  type Database,
  type DatabaseConfig,
  type OpenDatabaseOptions,
} from '../../src';
import { testDatabase } from '../../src/testing';

/**
 * A test's migrations: one, making `table` as a service's first (frozen) migration would, then
 * running `seed` on the same database.
 */
export function oneTableMigrations(
  table: string,
  columns: (builder: CreateTableBuilder<string>) => { execute(): Promise<void> },
  seed?: (db: Kysely<any>) => Promise<void>,
): Record<string, Migration> {
  return {
    [`2026-01-01T0000_${table}`]: {
      up: async (db: Kysely<any>) => {
        await columns(db.schema.createTable(table)).execute();
        await seed?.(db);
      },
    },
  };
}

export type MigratedTestDatabase<DB> = Database<DB> & {
  /** Closes the pool, then drops the schema. */
  drop(): Promise<void>;
};

/**
 * A fresh schema of the test PostgreSQL (see testDatabase), opened with `config` over the test's
 * defaults and migrated: the setup of a test file here.
 */
export async function migratedTestDatabase<DB>(
  service: string,
  migrations: Record<string, Migration>,
  config: Partial<DatabaseConfig> = {},
  options: OpenDatabaseOptions = {},
): Promise<MigratedTestDatabase<DB>> {
  const fresh = testDatabase(service);
  const database = await openDatabase<DB>({ ...fresh.config, ...config }, options);
  const drop = async () => {
    await database.close();
    await fresh.cleanup();
  };
  await migrateToLatest(database.db, database.schema, migrations).catch(async (error: unknown) => {
    await drop();
    throw error;
  });
  return { ...database, drop };
}
