import {
  migrateToLatest,
  openDatabase,
  type Database,
  type DatabaseConfig,
  type Migration,
} from '@platform/db';

/**
 * Opens the service's database, brings its schema up to date, runs `use`, and closes the database
 * even when migrating or `use` fails: how a command of the service's command line reaches it. Its
 * database has no statement or query timeout (migrations and batch commands may run long).
 */
export async function withServiceDatabase<DB, T>(
  config: DatabaseConfig,
  migrations: Record<string, Migration>,
  use: (database: Database<DB>, applied: string[]) => Promise<T>,
): Promise<T> {
  const database = await openDatabase<DB>({ ...config, statementTimeoutMs: 0, queryTimeoutMs: 0 });
  try {
    const applied = await migrateToLatest(database.db, database.schema, migrations);
    return await use(database, applied);
  } finally {
    await database.close();
  }
}
