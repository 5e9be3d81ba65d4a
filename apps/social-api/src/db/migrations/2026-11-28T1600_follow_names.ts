import { sql, type Kysely } from 'kysely';

// Frozen: written against Kysely<any>, never the app's current types.

/**
 * Follow lists are ordered by username, which lived only in `users`: a page of a user's 100,000
 * followers joined and sorted all of them. Each follow row now carries both names (`follower_name`,
 * `followed_name`, collation "C" like the usernames), indexed with the owner's id, so a page's members
 * are an index-only walk and its position a range count of the index.
 *
 * The names are kept by triggers: a follow takes the two names when it is written, reading each user
 * row FOR KEY SHARE (so it waits for a rename in progress and reads the new name); a rename writes
 * the new name into every follow row of that user, in its transaction (the API locks those rows
 * before the user's row, the order an unfollow takes them in, so the two never deadlock).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('followers')
    .addColumn('follower_name', sql`varchar(64) collate "C"`)
    .addColumn('followed_name', sql`varchar(64) collate "C"`)
    .execute();
  await sql`
    update followers f set follower_name = a.username, followed_name = b.username
    from users a, users b where a.id = f.follower_id and b.id = f.followed_id`.execute(db);
  await db.schema
    .alterTable('followers')
    .alterColumn('follower_name', (c) => c.setNotNull())
    .alterColumn('followed_name', (c) => c.setNotNull())
    .execute();
  // "Who follows X" by name, and "whom X follows" by name; the member's id rides in the index.
  await sql`create index followers_followed_name_idx on followers (followed_id, follower_name) include (follower_id)`.execute(
    db,
  );
  await sql`create index followers_follower_name_idx on followers (follower_id, followed_name) include (followed_id)`.execute(
    db,
  );

  // A follow written (or its ids changed): the names of its two users. A missing user leaves ''
  // so that the foreign key, not this column, refuses the row.
  await sql`
    create function name_follow() returns trigger language plpgsql set search_path from current as $$
    begin
      new.follower_name := coalesce((select username from users where id = new.follower_id for key share), '');
      new.followed_name := coalesce((select username from users where id = new.followed_id for key share), '');
      return new;
    end $$`.execute(db);
  await sql`create trigger name_follow before insert or update of follower_id, followed_id on followers
    for each row execute function name_follow()`.execute(db);

  // A rename: the new name in every follow row of that user.
  await sql`
    create function rename_follows() returns trigger language plpgsql set search_path from current as $$
    begin
      update followers set follower_name = new.username where follower_id = new.id;
      update followers set followed_name = new.username where followed_id = new.id;
      return null;
    end $$`.execute(db);
  await sql`create trigger rename_follows after update of username on users
    for each row when (old.username is distinct from new.username) execute function rename_follows()`.execute(
    db,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger rename_follows on users`.execute(db);
  await sql`drop function rename_follows()`.execute(db);
  await sql`drop trigger name_follow on followers`.execute(db);
  await sql`drop function name_follow()`.execute(db);
  await db.schema.alterTable('followers').dropColumn('follower_name').dropColumn('followed_name').execute();
}
