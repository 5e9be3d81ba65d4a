import { Migrator, sql, type Kysely, type Migration } from 'kysely';
import { assertSchemaName } from './connection';
import { retryWhileOtherSchemaDropped } from './dropped-schema';

export type { Migration };

/** A service's migrations by name (an index file per service, names sortable by timestamp). */
type Migrations = Record<string, Migration>;

// Migrations are frozen in time and see any database as Kysely<any>.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDatabase = Kysely<any>;

/**
 * Kysely's Migrator for the service's schema: the bookkeeping tables live inside it, so services
 * sharing one database never see each other's history.
 */
function schemaMigrator(db: AnyDatabase, schema: string, migrations: Migrations): Migrator {
  return new Migrator({
    db,
    migrationTableSchema: schema,
    provider: { getMigrations: async () => migrations },
  });
}

/**
 * Brings the service's schema up to date. Migrations are listed statically and their bookkeeping
 * tables live inside the schema (see schemaMigrator). They run on one connection with the statement
 * timeout lifted (a migration may rewrite a big table for longer than any request may take); pg's
 * client-side query timeout still applies, so a migration longer than that runs through the command
 * line (`migrate`), whose database has no timeouts.
 */
export async function migrateToLatest(
  db: AnyDatabase,
  schema: string,
  migrations: Migrations,
): Promise<string[]> {
  assertSchemaName(schema);
  return db.connection().execute(async (connection) => {
    await sql`set statement_timeout = 0`.execute(connection);
    let applied: string[];
    try {
      applied = await retryWhileOtherSchemaDropped(schema, () => migrate(connection, schema, migrations));
    } catch (error) {
      // The connection goes back to the pool either way; when it is broken the pool drops it.
      await sql`reset statement_timeout`.execute(connection).catch(() => undefined);
      throw error;
    }
    await sql`reset statement_timeout`.execute(connection);
    return applied;
  });
}

async function migrate(db: AnyDatabase, schema: string, migrations: Migrations): Promise<string[]> {
  const { error, results } = await schemaMigrator(db, schema, migrations).migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    const cause =
      error instanceof Error
        ? error
        : new Error(String(error ?? `migration ${failed?.migrationName} failed`));
    throw new Error(
      `migrating schema "${schema}" failed${failed ? ` at ${failed.migrationName}` : ''}: ${cause.message}`,
      { cause },
    );
  }
  return (results ?? []).map((r) => r.migrationName);
}

/**
 * The names of the service's migrations its schema has not run yet (all of them when it has none of
 * the bookkeeping tables): what a replica started with MIGRATE_ON_START=false waits for.
 */
export async function pendingMigrations(
  db: AnyDatabase,
  schema: string,
  migrations: Migrations,
): Promise<string[]> {
  assertSchemaName(schema);
  const known = await retryWhileOtherSchemaDropped(schema, () =>
    schemaMigrator(db, schema, migrations).getMigrations(),
  );
  return known.filter((m) => !m.executedAt).map((m) => m.name);
}
