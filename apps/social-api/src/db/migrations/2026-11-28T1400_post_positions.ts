import { sql, type Kysely } from 'kysely';

// Frozen: written against Kysely<any>, never the app's current types.

/**
 * Positions of posts, so that a page at any depth finds its first row without walking the rows
 * before it. The posts of a scope (0: all posts; else one author's) are cut, in their order
 * (timestamp, id), into buckets: a bucket starts at its key `lo` and holds the rows up to the next
 * bucket's `lo`, and knows how many (`n`). A position is then one pass over the bucket counts (about
 * one per 2,000 rows, `totals.post_bucket_rows`) plus a walk of at most one bucket in the index.
 *
 * Statement-level triggers keep the counts in the transaction of every write, as the counters do. A
 * bucket that grows past twice that size is cut again into buckets of that size (read from the index: the new
 * posts land in the newest bucket, so this is one cut per 2,000 posts); an emptied bucket is dropped
 * (its range joins the older one's). Every writer takes the `totals` row first (the counters' lock
 * order), so buckets are changed by one transaction at a time, and each statement of the trigger,
 * run after that lock (READ COMMITTED), sees the cuts of the one before. `social-api
 * repair-positions` rebuilds every bucket from the posts.
 *
 * A feed mixes authors, so one author's buckets do not line up with another's: for feeds every
 * author's posts are also counted per week on one grid for all (`post_weeks`; 7-day steps from Monday
 * 2000-01-03, UTC). A feed's page sums its authors' weeks, finds the weeks holding its first and its
 * last row, and sorts only the feed's posts of those weeks. A post never changes week but by hand,
 * so weeks are only counted up and down, never cut.
 *
 * Keys are compared as rows `(timestamp, id)`: the first bucket of a scope starts at
 * ('-infinity', 0), below every post, and "no newer bucket" is ('infinity', 0), above every post,
 * which is why a post's time must be finite (the API only ever writes now()).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table posts add constraint posts_timestamp_finite check (isfinite(timestamp)) not valid`.execute(
    db,
  );
  await sql`alter table posts validate constraint posts_timestamp_finite`.execute(db);
  await db.schema
    .createTable('post_buckets')
    .addColumn('scope', 'integer', (c) => c.notNull())
    .addColumn('lo_ts', sql`timestamp(3) with time zone`, (c) => c.notNull())
    .addColumn('lo_id', 'integer', (c) => c.notNull())
    .addColumn('n', 'integer', (c) => c.notNull().check(sql`n >= 0`))
    .addPrimaryKeyConstraint('post_buckets_pkey', ['scope', 'lo_ts', 'lo_id'])
    .execute();
  await db.schema
    .createTable('post_weeks')
    .addColumn('user_id', 'integer', (c) => c.notNull())
    .addColumn('week', 'timestamptz', (c) => c.notNull())
    .addColumn('n', 'integer', (c) => c.notNull().check(sql`n >= 0`))
    .addPrimaryKeyConstraint('post_weeks_pkey', ['user_id', 'week'])
    .execute();
  // The size buckets are cut to, beside the totals every writer of posts locks anyway.
  await db.schema
    .alterTable('totals')
    .addColumn('post_bucket_rows', 'integer', (c) =>
      c
        .notNull()
        .defaultTo(2000)
        .check(sql`post_bucket_rows >= 2`),
    )
    .execute();

  // The buckets of one scope between two keys, cut again from its posts into buckets of `size`; the
  // first keeps the range's start, so the ranges stay contiguous.
  await sql`
    create function cut_post_buckets(s integer, from_ts timestamptz, from_id integer, to_ts timestamptz, to_id integer, size integer)
    returns void language plpgsql set search_path from current as $$
    begin
      delete from post_buckets b
      where b.scope = s and (b.lo_ts, b.lo_id) >= (from_ts, from_id) and (b.lo_ts, b.lo_id) < (to_ts, to_id);
      insert into post_buckets (scope, lo_ts, lo_id, n)
      select s, case when k.rn = 1 then from_ts else k.ts end, case when k.rn = 1 then from_id else k.id end,
        least(size, k.total - k.rn + 1)
      from (
        select r.ts, r.id, row_number() over (order by r.ts, r.id) as rn, count(*) over () as total
        from (
          select p.timestamp as ts, p.id from posts p
          where s = 0 and (p.timestamp, p.id) >= (from_ts, from_id) and (p.timestamp, p.id) < (to_ts, to_id)
          union all
          select p.timestamp, p.id from posts p
          where s <> 0 and p.user_id = s
            and (p.user_id, p.timestamp, p.id) >= (s, from_ts, from_id) and (p.user_id, p.timestamp, p.id) < (s, to_ts, to_id)
        ) r
      ) k
      where (k.rn - 1) % size = 0;
    end $$`.execute(db);

  // A post's place: its key and its author.
  await sql`create type post_place as (ts timestamptz, id integer, user_id integer)`.execute(db);
  await sql`
    create function position_posts() returns trigger language plpgsql set search_path from current as $$
    declare
      added post_place[] := '{}';
      removed post_place[] := '{}';
      b record;
      size integer;
    begin
      if tg_op = 'TRUNCATE' then
        delete from post_buckets;
        delete from post_weeks;
        return null;
      end if;
      -- The places added and removed (an UPDATE that keeps key and author, an edit, changes nothing).
      if tg_op = 'INSERT' then
        added := array(select (timestamp, id, user_id)::post_place from new_rows);
      elsif tg_op = 'DELETE' then
        removed := array(select (timestamp, id, user_id)::post_place from old_rows);
      else
        added := array(select (timestamp, id, user_id)::post_place from new_rows
                       except all select (timestamp, id, user_id)::post_place from old_rows);
        removed := array(select (timestamp, id, user_id)::post_place from old_rows
                         except all select (timestamp, id, user_id)::post_place from new_rows);
      end if;
      if cardinality(added) = 0 and cardinality(removed) = 0 then return null; end if;
      select post_bucket_rows into size from totals for no key update;
      -- Each author's weeks: counts added in key order (row locks in one order), then those taken
      -- away; emptied weeks go.
      insert into post_weeks (user_id, week, n)
      select a.user_id, date_bin('7 days', a.ts, '2000-01-03 00:00:00+00'), count(*)
      from unnest(added) a group by 1, 2 order by 1, 2
      on conflict (user_id, week) do update set n = post_weeks.n + excluded.n;
      with gone as (
        select r.user_id, date_bin('7 days', r.ts, '2000-01-03 00:00:00+00') as week, count(*)::int as n
        from unnest(removed) r group by 1, 2
      )
      update post_weeks w set n = w.n - gone.n from gone where (w.user_id, w.week) = (gone.user_id, gone.week);
      delete from post_weeks w where w.n = 0
        and (w.user_id, w.week) in (select r.user_id, date_bin('7 days', r.ts, '2000-01-03 00:00:00+00') from unnest(removed) r);
      -- Every scope a post is added to has a first bucket.
      insert into post_buckets (scope, lo_ts, lo_id, n)
      select distinct scope, '-infinity'::timestamptz, 0, 0 from unnest(added) a, lateral (values (0), (a.user_id)) s(scope)
      on conflict do nothing;
      -- Each changed post counts in the bucket of its key, in its author's scope and in scope 0.
      for b in
        with change(ts, id, user_id, d) as (
          select a.ts, a.id, a.user_id, 1 from unnest(added) a
          union all
          select r.ts, r.id, r.user_id, -1 from unnest(removed) r
        ),
        delta as (
          select bucket.scope, bucket.lo_ts, bucket.lo_id, sum(c.d)::int as d
          from change c
          cross join lateral (values (0), (c.user_id)) s(scope)
          cross join lateral (
            select pb.scope, pb.lo_ts, pb.lo_id from post_buckets pb
            where pb.scope = s.scope and (pb.lo_ts, pb.lo_id) <= (c.ts, c.id)
            order by pb.lo_ts desc, pb.lo_id desc limit 1
          ) bucket
          group by 1, 2, 3 having sum(c.d) <> 0
        )
        update post_buckets pb set n = pb.n + delta.d
        from delta
        where (pb.scope, pb.lo_ts, pb.lo_id) = (delta.scope, delta.lo_ts, delta.lo_id)
        returning pb.scope, pb.lo_ts, pb.lo_id, pb.n
      loop
        if b.n = 0 then
          delete from post_buckets pb where (pb.scope, pb.lo_ts, pb.lo_id) = (b.scope, b.lo_ts, b.lo_id);
        elsif b.n > 2 * size then
          perform cut_post_buckets(b.scope, b.lo_ts, b.lo_id, coalesce(next.lo_ts, 'infinity'), coalesce(next.lo_id, 0), size)
          from (select 1) one
          left join lateral (
            select pb.lo_ts, pb.lo_id from post_buckets pb
            where pb.scope = b.scope and (pb.lo_ts, pb.lo_id) > (b.lo_ts, b.lo_id)
            order by pb.lo_ts, pb.lo_id limit 1
          ) next on true;
        end if;
      end loop;
      return null;
    end $$`.execute(db);
  await sql`create trigger position_posts_insert after insert on posts
    referencing new table as new_rows for each statement execute function position_posts()`.execute(db);
  await sql`create trigger position_posts_update after update on posts
    referencing old table as old_rows new table as new_rows for each statement execute function position_posts()`.execute(
    db,
  );
  await sql`create trigger position_posts_delete after delete on posts
    referencing old table as old_rows for each statement execute function position_posts()`.execute(db);
  await sql`create trigger position_posts_truncate after truncate on posts
    for each statement execute function position_posts()`.execute(db);

  // The buckets and weeks of the posts there are now.
  await sql`
    insert into post_weeks (user_id, week, n)
    select user_id, date_bin('7 days', timestamp, '2000-01-03 00:00:00+00'), count(*) from posts group by 1, 2`.execute(
    db,
  );
  await sql`select cut_post_buckets(0, '-infinity', 0, 'infinity', 0, 2000)`.execute(db);
  await sql`select cut_post_buckets(u.id, '-infinity', 0, 'infinity', 0, 2000) from users u where u.posts_count > 0`.execute(
    db,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const event of ['insert', 'update', 'delete', 'truncate'])
    await sql`drop trigger if exists ${sql.raw(`position_posts_${event}`)} on posts`.execute(db);
  await sql`drop function position_posts()`.execute(db);
  await sql`drop type post_place`.execute(db);
  await sql`drop function cut_post_buckets(integer, timestamptz, integer, timestamptz, integer, integer)`.execute(
    db,
  );
  await db.schema.dropTable('post_buckets').execute();
  await db.schema.dropTable('post_weeks').execute();
  await db.schema.alterTable('totals').dropColumn('post_bucket_rows').execute();
  await sql`alter table posts drop constraint posts_timestamp_finite`.execute(db);
}
