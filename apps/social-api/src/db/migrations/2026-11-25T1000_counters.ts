import { sql, type Kysely } from 'kysely';

// Frozen: written against Kysely<any>, never the app's current types.

/**
 * Counters, so that no page counts its collection: posts, followers and following per user (columns
 * of `users`), and the number of posts and of users (the one row of `totals`). Statement-level
 * triggers keep them in the transaction of every write, whoever makes it (the API, `fake`, a
 * cascade from a deleted user, psql), one UPDATE per statement whatever its number of rows. The
 * repair command (`social-api repair-counters`) recomputes them from count(*).
 *
 * Locks are always taken in one order, so that concurrent writers wait instead of deadlocking: the
 * `totals` row first, then users rows by id. The functions keep the schema they were created in
 * (`set search_path from current`), so a session on another search path (psql) counts right too.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('users')
    .addColumn('posts_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('followers_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('following_count', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .createTable('totals')
    .addColumn('id', 'boolean', (c) =>
      c
        .primaryKey()
        .defaultTo(true)
        .check(sql`id`),
    )
    .addColumn('posts', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('users', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();

  // Back-fill from what is there now (the triggers below keep them from here on).
  await sql`insert into totals (id, posts, users) values (true, (select count(*) from posts), (select count(*) from users))`.execute(
    db,
  );
  await sql`
    update users u set
      posts_count = (select count(*) from posts p where p.user_id = u.id),
      followers_count = (select count(*) from followers f where f.followed_id = u.id),
      following_count = (select count(*) from followers f where f.follower_id = u.id)`.execute(db);

  // Posts: the author's posts_count and the total. Net change per author of the statement's rows
  // (an UPDATE that keeps the author changes nothing and locks nothing).
  await sql`
    create function count_posts() returns trigger language plpgsql set search_path from current as $$
    declare
      added int[] := '{}';
      removed int[] := '{}';
      ids int[];
      deltas int[];
      net bigint;
    begin
      if tg_op = 'TRUNCATE' then
        update totals set posts = 0;
        update users set posts_count = 0 where posts_count <> 0;
        return null;
      end if;
      if tg_op in ('INSERT', 'UPDATE') then select coalesce(array_agg(user_id), '{}') into added from new_rows; end if;
      if tg_op in ('DELETE', 'UPDATE') then select coalesce(array_agg(user_id), '{}') into removed from old_rows; end if;
      select array_agg(id order by id), array_agg(n order by id), sum(n) into ids, deltas, net
      from (
        select id, sum(n)::int as n
        from (select unnest(added) as id, 1 as n union all select unnest(removed), -1) change
        group by id having sum(n) <> 0
      ) per_user;
      if ids is null then return null; end if;
      if net <> 0 then update totals set posts = posts + net; end if;
      perform 1 from users where id = any(ids) order by id for no key update;
      update users u set posts_count = u.posts_count + d.n from unnest(ids, deltas) d(id, n) where u.id = d.id;
      return null;
    end $$`.execute(db);

  // Followers: the follower's following_count and the followed user's followers_count.
  await sql`
    create function count_follows() returns trigger language plpgsql set search_path from current as $$
    declare
      added_by int[] := '{}';
      added_to int[] := '{}';
      removed_by int[] := '{}';
      removed_to int[] := '{}';
      ids int[];
      following_deltas int[];
      followers_deltas int[];
    begin
      if tg_op = 'TRUNCATE' then
        update users set followers_count = 0, following_count = 0
        where followers_count <> 0 or following_count <> 0;
        return null;
      end if;
      if tg_op in ('INSERT', 'UPDATE') then
        select coalesce(array_agg(follower_id), '{}'), coalesce(array_agg(followed_id), '{}')
        into added_by, added_to from new_rows;
      end if;
      if tg_op in ('DELETE', 'UPDATE') then
        select coalesce(array_agg(follower_id), '{}'), coalesce(array_agg(followed_id), '{}')
        into removed_by, removed_to from old_rows;
      end if;
      select array_agg(id order by id), array_agg(following order by id), array_agg(followers order by id)
      into ids, following_deltas, followers_deltas
      from (
        select id, sum(following)::int as following, sum(followers)::int as followers
        from (
          select unnest(added_by) as id, 1 as following, 0 as followers
          union all select unnest(added_to), 0, 1
          union all select unnest(removed_by), -1, 0
          union all select unnest(removed_to), 0, -1
        ) change
        group by id having sum(following) <> 0 or sum(followers) <> 0
      ) per_user;
      if ids is null then return null; end if;
      perform 1 from users where id = any(ids) order by id for no key update;
      update users u set following_count = u.following_count + d.following, followers_count = u.followers_count + d.followers
      from unnest(ids, following_deltas, followers_deltas) d(id, following, followers) where u.id = d.id;
      return null;
    end $$`.execute(db);

  // Users: the total.
  await sql`
    create function count_users() returns trigger language plpgsql set search_path from current as $$
    declare
      net bigint;
    begin
      if tg_op = 'TRUNCATE' then
        update totals set users = 0;
        return null;
      elsif tg_op = 'INSERT' then
        select count(*) into net from new_rows;
      else
        select -count(*) into net from old_rows;
      end if;
      if net <> 0 then update totals set users = users + net; end if;
      return null;
    end $$`.execute(db);

  for (const [table, fn] of [
    ['posts', 'count_posts'],
    ['followers', 'count_follows'],
  ] as const) {
    await sql`create trigger ${sql.raw(`${fn}_insert`)} after insert on ${sql.table(table)}
      referencing new table as new_rows for each statement execute function ${sql.raw(fn)}()`.execute(db);
    await sql`create trigger ${sql.raw(`${fn}_update`)} after update on ${sql.table(table)}
      referencing old table as old_rows new table as new_rows for each statement execute function ${sql.raw(fn)}()`.execute(
      db,
    );
    await sql`create trigger ${sql.raw(`${fn}_delete`)} after delete on ${sql.table(table)}
      referencing old table as old_rows for each statement execute function ${sql.raw(fn)}()`.execute(db);
    await sql`create trigger ${sql.raw(`${fn}_truncate`)} after truncate on ${sql.table(table)}
      for each statement execute function ${sql.raw(fn)}()`.execute(db);
  }
  await sql`create trigger count_users_insert after insert on users
    referencing new table as new_rows for each statement execute function count_users()`.execute(db);
  await sql`create trigger count_users_delete after delete on users
    referencing old table as old_rows for each statement execute function count_users()`.execute(db);
  await sql`create trigger count_users_truncate after truncate on users
    for each statement execute function count_users()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const [table, fn] of [
    ['posts', 'count_posts'],
    ['followers', 'count_follows'],
    ['users', 'count_users'],
  ] as const) {
    for (const event of ['insert', 'update', 'delete', 'truncate'])
      await sql`drop trigger if exists ${sql.raw(`${fn}_${event}`)} on ${sql.table(table)}`.execute(db);
    await sql`drop function ${sql.raw(fn)}()`.execute(db);
  }
  await db.schema.dropTable('totals').execute();
  await db.schema
    .alterTable('users')
    .dropColumn('posts_count')
    .dropColumn('followers_count')
    .dropColumn('following_count')
    .execute();
}
