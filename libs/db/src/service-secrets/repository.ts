import type { Generated, Kysely } from 'kysely';

/**
 * The table a service's migrations make for the secrets it draws for itself (a signing key when
 * none is configured): one row per name, written once by the migration that creates it.
 */
export interface ServiceSecretsTable<Name extends string = string> {
  name: Name;
  value: string;
  created_at: Generated<Date>;
}

/** The secrets of any service whose schema has a `service_secrets` table. */
export function createSecretsRepository<DB extends { service_secrets: ServiceSecretsTable }>(db: Kysely<DB>) {
  // Kysely cannot type a query over a table of a type parameter: the table as every service has it.
  const secrets = db as unknown as Kysely<{ service_secrets: ServiceSecretsTable }>;
  return {
    /** The secret the migrations made for `name` (one primary-key lookup). */
    async read(name: DB['service_secrets']['name']): Promise<string> {
      // select value from service_secrets where name = $1
      const row = await secrets
        .selectFrom('service_secrets')
        .select('value')
        .where('name', '=', name)
        .executeTakeFirstOrThrow();
      return row.value;
    },
  };
}
