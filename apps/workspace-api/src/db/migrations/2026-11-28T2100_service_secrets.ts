import { sql, type Kysely } from 'kysely';

// Frozen: written against Kysely<any>, never the app's current types.

/**
 * Secrets the service makes for itself, one row per use. The session cookie's signing key (the
 * cookie the connect page gets for a session, which the reverse proxy checks) is made here, once per
 * database, from PostgreSQL's strong random source (gen_random_uuid, 2 × 122 random bits): every
 * replica reads the same key, it survives restarts, and no operator has to set (or can ship a
 * well-known) value.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('service_secrets')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull().check(sql`char_length(value) >= 32`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await sql`insert into service_secrets (name, value)
    values ('session_cookie', replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''))`.execute(
    db,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('service_secrets').execute();
}
