import { sql, type Kysely } from 'kysely';

// Frozen: written against Kysely<any>, never the app's current types.

/**
 * Two facts per user that no one outside the database knows or can claim:
 *
 * - `reset_secret`: a random per-user secret folded into the fingerprint of a reset link, so that
 *   SECRET_KEY alone (leaked, or one of the public examples) forges no reset token, not even for
 *   users without a password (OAuth2-created or generated ones), whose fingerprint was a constant.
 *   Every row gets its own at insert (the column default, whoever inserts: the API, `fake`, psql)
 *   and existing rows get theirs here (a volatile default is evaluated per row). A new one is drawn
 *   whenever the password changes, by a trigger, whoever changes it.
 * - `email_verified`: whether the address was proven to belong to the account's owner: by an
 *   OAuth2 provider that says it verified it, or by a reset completed through the mailed link. Only
 *   such an account is reachable by an OAuth2 login of that address. A change of address clears it.
 *
 * gen_random_uuid() is core PostgreSQL (13+) and draws from the server's strong random source: two
 * of them give 244 random bits.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    alter table users
      add column reset_secret text not null
        default replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''),
      add column email_verified boolean not null default false`.execute(db);

  await sql`
    create function users_protect_secrets() returns trigger language plpgsql set search_path from current as $$
    begin
      if new.password_hash is distinct from old.password_hash and new.reset_secret = old.reset_secret then
        new.reset_secret := replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '');
      end if;
      if lower(new.email) is distinct from lower(old.email) and new.email_verified = old.email_verified then
        new.email_verified := false;
      end if;
      return new;
    end $$`.execute(db);
  await sql`
    create trigger users_protect_secrets before update of password_hash, email on users
    for each row execute function users_protect_secrets()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger users_protect_secrets on users`.execute(db);
  await sql`drop function users_protect_secrets()`.execute(db);
  await sql`alter table users drop column reset_secret, drop column email_verified`.execute(db);
}
