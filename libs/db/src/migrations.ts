import { Migrator, type Kysely, type Migration } from 'kysely';
import { assertSchemaName } from './connection';

export type { Migration };

/**
 * Brings the service's schema up to date. Migrations are listed statically (an index file per
 * service, names sortable by timestamp) and their bookkeeping tables live inside the schema, so
 * services sharing one database never see each other's history.
 */
export async function migrateToLatest(
  // Migrations are frozen in time and see any database as Kysely<any>.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  db: Kysely<any>,
  schema: string,
  migrations: Record<string, Migration>,
): Promise<string[]> {
  assertSchemaName(schema);
  const migrator = new Migrator({
    db,
    migrationTableSchema: schema,
    provider: { getMigrations: async () => migrations },
  });
  const { error, results } = await migrator.migrateToLatest();
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
