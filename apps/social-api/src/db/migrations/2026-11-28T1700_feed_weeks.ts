import { sql, type Kysely } from 'kysely';

// Frozen: written against Kysely<any>, never the app's current types.

/**
 * Feeds counted per week, fanned out on write (as Mastodon fans a post out to its followers' home
 * timelines): `feed_weeks(user_id, week, n)` is how many posts the feed of `user_id` (their own posts
 * and those of everyone they follow) holds in each week of post_weeks' grid (migration
 * 2026-11-28T1400_post_positions). A feed's position is then a running sum over its owner's weeks
 * (one row a week), not over every author's weeks (2,001 authors × 150 weeks for a user following
 * 2,000).
 *
 * Statement-level triggers keep it in the writing transaction, whoever writes (the API, `fake`, a
 * cascade from a deleted user, psql):
 * - post_weeks changed (author A, week W, by d: posts written, deleted, moved): d is added to week W
 *   of A's own feed and of each follower's. A feed's authors are a set (`followed ∪ {self}`), so a
 *   user who follows themself is counted once.
 * - a follow adds the followed author's post_weeks to the follower's feed, an unfollow subtracts them;
 *   a follow of oneself changes nothing.
 * - a user deleted: PostgreSQL deletes their posts and follows (the cascades) before it runs the
 *   statement triggers of either, so neither would see the other: before each user row goes, their
 *   posts are taken out of their followers' feeds (a row trigger), and the follows of a user no
 *   longer there are then left out. Their own feed empties with their posts and their follows.
 * Rows that reach 0 go.
 *
 * Locks, so that writers wait instead of deadlocking, and a follow never misses a post nor a post a
 * follower: every writer takes the `totals` row before its counters' locks (the counters' lock
 * order), a writer of posts already (migration 2026-11-25T1000_counters), now a writer of follows
 * too (a statement trigger fired before the counters', after the statement's rows and its event,
 * whose log lock the API's writes of posts take before `totals` as well) and a deleter of users
 * (before any row). So follows and changes of post_weeks come one after the other, each reading
 * what the other committed. The feeds' rows are then written by one upsert in
 * (user_id, week) order, additions and subtractions alike, which is why `n` has no CHECK (ON
 * CONFLICT checks the proposed row, a negative delta).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('feed_weeks')
    .addColumn('user_id', 'integer', (c) => c.notNull())
    .addColumn('week', 'timestamptz', (c) => c.notNull())
    .addColumn('n', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('feed_weeks_pkey', ['user_id', 'week'])
    .execute();
  // A change of a feed's week (what the triggers below add to feed_weeks), and a follow written or
  // taken back (d: +1 or -1).
  await sql`create type feed_week_delta as (user_id integer, week timestamptz, n integer)`.execute(db);
  await sql`create type follow_change as (follower_id integer, followed_id integer, d integer)`.execute(db);

  // Adds each delta to its feed's week in key order (row locks in one order), then drops the rows
  // that reached 0 (locked already by this transaction).
  await sql`
    create function add_feed_weeks(deltas feed_week_delta[]) returns void
    language plpgsql set search_path from current as $$
    declare
      emptied feed_week_delta[];
    begin
      with written as (
        insert into feed_weeks (user_id, week, n)
        select d.user_id, d.week, sum(d.n)::int from unnest(deltas) d
        group by 1, 2 having sum(d.n) <> 0
        order by 1, 2
        on conflict (user_id, week) do update set n = feed_weeks.n + excluded.n
        returning feed_weeks.user_id, feed_weeks.week, feed_weeks.n
      )
      select coalesce(array_agg((w.user_id, w.week, 0)::feed_week_delta), '{}') into emptied
      from written w where w.n = 0;
      if cardinality(emptied) > 0 then
        delete from feed_weeks f using unnest(emptied) e
        where (f.user_id, f.week) = (e.user_id, e.week) and f.n = 0;
      end if;
    end $$`.execute(db);

  // post_weeks changed: each author's change per week, into their own feed and their followers'.
  await sql`
    create function fan_out_post_weeks() returns trigger language plpgsql set search_path from current as $$
    declare
      changed feed_week_delta[];
    begin
      if tg_op = 'TRUNCATE' then
        delete from feed_weeks;
        return null;
      end if;
      if tg_op = 'INSERT' then
        changed := array(select (user_id, week, n)::feed_week_delta from new_rows where n <> 0);
      elsif tg_op = 'DELETE' then
        changed := array(select (user_id, week, -n)::feed_week_delta from old_rows where n <> 0);
      else
        changed := array(
          select (c.user_id, c.week, sum(c.n))::feed_week_delta
          from (select user_id, week, n from new_rows union all select user_id, week, -n from old_rows) c
          group by c.user_id, c.week having sum(c.n) <> 0);
      end if;
      if cardinality(changed) = 0 then return null; end if;
      -- The author's own feed, and each follower's but the author's own follow of themself.
      perform add_feed_weeks(array(
        select (c.user_id, c.week, c.n)::feed_week_delta from unnest(changed) c
        union all
        select (f.follower_id, c.week, c.n)::feed_week_delta
        from unnest(changed) c join followers f on f.followed_id = c.user_id and f.follower_id <> c.user_id));
      return null;
    end $$`.execute(db);

  // Follows written: the followed authors' weeks into (or out of) their followers' feeds.
  await sql`
    create function fan_in_follows() returns trigger language plpgsql set search_path from current as $$
    declare
      changed follow_change[];
    begin
      if tg_op = 'TRUNCATE' then
        -- No one follows anyone: every feed is its owner's own posts.
        delete from feed_weeks;
        insert into feed_weeks (user_id, week, n) select user_id, week, n from post_weeks order by 1, 2;
        return null;
      end if;
      -- (follower, followed, +1 or -1): one's own posts are in one's feed whatever one follows.
      if tg_op = 'INSERT' then
        changed := array(select (follower_id, followed_id, 1)::follow_change from new_rows
                         where follower_id <> followed_id);
      elsif tg_op = 'DELETE' then
        changed := array(select (follower_id, followed_id, -1)::follow_change from old_rows
                         where follower_id <> followed_id);
      else
        changed := array(
          select (c.follower_id, c.followed_id, sum(c.d))::follow_change
          from (
            select follower_id, followed_id, 1 as d from new_rows
            union all
            select follower_id, followed_id, -1 from old_rows
          ) c
          where c.follower_id <> c.followed_id
          group by c.follower_id, c.followed_id having sum(c.d) <> 0);
      end if;
      if cardinality(changed) = 0 then return null; end if;
      -- The followed authors' weeks; those of a user deleted by this statement were taken out of
      -- their followers' feeds before the user went (take_out_deleted_author).
      perform add_feed_weeks(array(
        select (c.follower_id, pw.week, c.d * pw.n)::feed_week_delta
        from unnest(changed) c
        join users u on u.id = c.followed_id
        join post_weeks pw on pw.user_id = c.followed_id));
      return null;
    end $$`.execute(db);

  // A user about to be deleted: their posts out of their followers' feeds, while both are there.
  await sql`
    create function take_out_deleted_author() returns trigger language plpgsql set search_path from current as $$
    begin
      perform add_feed_weeks(array(
        select (f.follower_id, pw.week, -pw.n)::feed_week_delta
        from followers f join post_weeks pw on pw.user_id = f.followed_id
        where f.followed_id = old.id and f.follower_id <> old.id));
      return old;
    end $$`.execute(db);

  // The counters' first lock, taken by a statement that writes follows before its counters' and
  // feeds' triggers (triggers fire in name order), or by one that deletes users before any row.
  await sql`
    create function lock_totals() returns trigger language plpgsql set search_path from current as $$
    begin
      perform 1 from totals for no key update;
      return null;
    end $$`.execute(db);
  await sql`create trigger before_counters_lock_totals
    after insert or update of follower_id, followed_id or delete or truncate on followers
    for each statement execute function lock_totals()`.execute(db);
  await sql`create trigger lock_totals_for_deleted_users before delete or truncate on users
    for each statement execute function lock_totals()`.execute(db);
  await sql`create trigger take_out_deleted_author before delete on users
    for each row execute function take_out_deleted_author()`.execute(db);
  await sql`create trigger fan_out_post_weeks_insert after insert on post_weeks
    referencing new table as new_rows for each statement execute function fan_out_post_weeks()`.execute(db);
  await sql`create trigger fan_out_post_weeks_update after update on post_weeks
    referencing old table as old_rows new table as new_rows for each statement execute function fan_out_post_weeks()`.execute(
    db,
  );
  await sql`create trigger fan_out_post_weeks_delete after delete on post_weeks
    referencing old table as old_rows for each statement execute function fan_out_post_weeks()`.execute(db);
  await sql`create trigger fan_out_post_weeks_truncate after truncate on post_weeks
    for each statement execute function fan_out_post_weeks()`.execute(db);
  await sql`create trigger fan_in_follows_insert after insert on followers
    referencing new table as new_rows for each statement execute function fan_in_follows()`.execute(db);
  await sql`create trigger fan_in_follows_update after update on followers
    referencing old table as old_rows new table as new_rows for each statement execute function fan_in_follows()`.execute(
    db,
  );
  await sql`create trigger fan_in_follows_delete after delete on followers
    referencing old table as old_rows for each statement execute function fan_in_follows()`.execute(db);
  await sql`create trigger fan_in_follows_truncate after truncate on followers
    for each statement execute function fan_in_follows()`.execute(db);

  // The feeds of the posts and follows there are now: each user's authors (a set), their weeks.
  await sql`
    insert into feed_weeks (user_id, week, n)
    select a.owner, pw.week, sum(pw.n)
    from (
      select id as owner, id as author from users
      union all
      select follower_id, followed_id from followers where follower_id <> followed_id
    ) a
    join post_weeks pw on pw.user_id = a.author
    group by 1, 2`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger take_out_deleted_author on users`.execute(db);
  await sql`drop trigger lock_totals_for_deleted_users on users`.execute(db);
  await sql`drop trigger before_counters_lock_totals on followers`.execute(db);
  await sql`drop function take_out_deleted_author()`.execute(db);
  await sql`drop function lock_totals()`.execute(db);
  for (const event of ['insert', 'update', 'delete', 'truncate']) {
    await sql`drop trigger if exists ${sql.raw(`fan_out_post_weeks_${event}`)} on post_weeks`.execute(db);
    await sql`drop trigger if exists ${sql.raw(`fan_in_follows_${event}`)} on followers`.execute(db);
  }
  await sql`drop function fan_in_follows()`.execute(db);
  await sql`drop function fan_out_post_weeks()`.execute(db);
  await sql`drop function add_feed_weeks(feed_week_delta[])`.execute(db);
  await sql`drop type follow_change`.execute(db);
  await sql`drop type feed_week_delta`.execute(db);
  await db.schema.dropTable('feed_weeks').execute();
}
