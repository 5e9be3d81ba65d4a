import type { Kysely } from 'kysely';
import type { ServiceSecretsTable, SocialDatabase } from '../db/schema';

export function createSecretsRepository(db: Kysely<SocialDatabase>) {
  return {
    /** The secret the migrations made for `name` (one primary-key lookup). */
    async read(name: ServiceSecretsTable['name']): Promise<string> {
      // select value from service_secrets where name = $1
      const row = await db
        .selectFrom('service_secrets')
        .select('value')
        .where('name', '=', name)
        .executeTakeFirstOrThrow();
      return row.value;
    },
  };
}
