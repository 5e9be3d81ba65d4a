import { type Kysely } from 'kysely';

// Frozen: written against Kysely<any>, never the app's current types.

/** OAuth2 states already presented, until they would have expired: a state works once, on any instance. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('spent_oauth2_states')
    .addColumn('state', 'text', (c) => c.primaryKey())
    .addColumn('expires', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('spent_oauth2_states_expires_idx')
    .on('spent_oauth2_states')
    .column('expires')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('spent_oauth2_states').execute();
}
