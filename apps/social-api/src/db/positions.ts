import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely';
import type { SocialDatabase } from './schema';

export interface PositionRepair {
  /** Buckets whose count was wrong (or missing), plus post scopes whose buckets did not cover all their posts. */
  wrong: number;
  /** Weeks of feeds whose count was wrong, missing or stray (against the authors' weeks once right). */
  feedWeeks: number;
  /** Buckets there are after the repair. */
  buckets: number;
  /** Follow rows whose copy of a user's name was stale. */
  follows: number;
}

/** Each author's posts per week, as post_weeks counts them (migration 2026-11-28T1400_post_positions). */
const weeksOfPosts = sql`
  select user_id, date_bin('7 days', timestamp, '2000-01-03 00:00:00+00') as week, count(*) as n from posts group by 1, 2`;

/**
 * Each feed's posts per week as feed_weeks counts them (migration 2026-11-28T1700_feed_weeks): the
 * weeks of its authors (the owner, and everyone they follow but themself) summed.
 */
const feedWeeksOfPostWeeks = sql`
  select a.owner as user_id, pw.week, sum(pw.n)::int as n
  from (
    select id as owner, id as author from users
    union all
    select follower_id, followed_id from followers where follower_id <> followed_id
  ) a
  join post_weeks pw on pw.user_id = a.author
  group by 1, 2`;

/**
 * How far the buckets are from the rows they count. Posts (migration 2026-11-28T1400): each bucket's
 * count against the posts in its range, and each scope's sum against its number of posts (a post
 * below a scope's first bucket counts in none); index range counts, one pass over the posts per
 * scope; each author's weeks against a count of their posts per week. Users (2026-11-28T1500): each
 * range of ids against a count of its users.
 */
async function wrongBuckets(db: Kysely<SocialDatabase>): Promise<number> {
  const { rows } = await sql<{ wrong: string }>`
    with b as (
      select scope, lo_ts, lo_id, n,
        lead(lo_ts, 1, 'infinity') over w as hi_ts, lead(lo_id, 1, 0) over w as hi_id
      from post_buckets window w as (partition by scope order by lo_ts, lo_id)
    ),
    counted as (
      select b.n, (
        select count(*) from posts p
        where (p.timestamp, p.id) >= (b.lo_ts, b.lo_id) and (p.timestamp, p.id) < (b.hi_ts, b.hi_id)
      ) as actual
      from b where b.scope = 0
      union all
      select b.n, (
        select count(*) from posts p
        where p.user_id = b.scope
          and (p.user_id, p.timestamp, p.id) >= (b.scope, b.lo_ts, b.lo_id)
          and (p.user_id, p.timestamp, p.id) < (b.scope, b.hi_ts, b.hi_id)
      )
      from b where b.scope <> 0
    ),
    scopes as (
      select 0 as scope, count(*) as posts from posts
      union all
      select user_id, count(*) from posts group by user_id
    )
    select (select count(*) from counted where n <> actual)
      + (select count(*) from scopes s
         where s.posts <> coalesce((select sum(n) from post_buckets b where b.scope = s.scope), 0))
      + (select count(*) from (select (id >> 10) << 10 as lo, count(*) as n from users group by 1) actual
         full join user_buckets b using (lo) where actual.n is distinct from b.n)
      + (select count(*) from (${weeksOfPosts}) actual
         full join post_weeks w using (user_id, week) where actual.n is distinct from w.n) as wrong`.execute(
    db,
  );
  return Number(rows[0].wrong);
}

/**
 * Makes a table of counts per (user_id, week) equal `actual` (rows of the same shape) by writing only
 * the rows that differ: those missing or wrong upserted in key order, the stray ones deleted. Returns
 * how many rows differed.
 */
async function setTo(
  tx: Transaction<SocialDatabase>,
  table: 'post_weeks' | 'feed_weeks',
  actual: RawBuilder<unknown>,
): Promise<number> {
  const t = sql.table(table);
  await sql`create temporary table actual_weeks on commit drop as ${actual}`.execute(tx);
  const upserted = await sql`
    insert into ${t} (user_id, week, n)
    select a.user_id, a.week, a.n from actual_weeks a
    where a.n is distinct from (select w.n from ${t} w where (w.user_id, w.week) = (a.user_id, a.week))
    order by 1, 2
    on conflict (user_id, week) do update set n = excluded.n`.execute(tx);
  const deleted = await sql`
    delete from ${t} w
    where not exists (select 1 from actual_weeks a where (a.user_id, a.week) = (w.user_id, w.week))`.execute(
    tx,
  );
  await sql`drop table actual_weeks`.execute(tx);
  return Number(upserted.numAffectedRows ?? 0) + Number(deleted.numAffectedRows ?? 0);
}

/**
 * The repair of the buckets, like `repairCounters`: every post scope cut again from its posts and the
 * users counted again per range of ids, in one transaction that writers wait for (readers do not),
 * after counting what was wrong.
 */
export function repairPositions(db: Kysely<SocialDatabase>): Promise<PositionRepair> {
  return db.transaction().execute(async (tx) => {
    // The counters' lock order: writers of posts, follows and users wait; the totals row is post_buckets' own lock.
    await sql`lock table posts, followers, users, totals in share row exclusive mode`.execute(tx);
    const wrong = await wrongBuckets(tx);
    await sql`delete from post_buckets`.execute(tx);
    await sql`
      select cut_post_buckets(s.scope, '-infinity', 0, 'infinity', 0, coalesce(t.post_bucket_rows, 2000))
      from (select 0 as scope union all select distinct user_id from posts) s
      left join totals t on true`.execute(tx);
    // Only the authors' weeks that are wrong are written, so the feeds' triggers carry just those
    // corrections into the feeds; then the feeds' own weeks are checked against them.
    await setTo(tx, 'post_weeks', weeksOfPosts);
    const feedWeeks = await setTo(tx, 'feed_weeks', feedWeeksOfPostWeeks);
    await sql`delete from user_buckets`.execute(tx);
    await sql`insert into user_buckets (lo, n) select (id >> 10) << 10, count(*) from users group by 1`.execute(
      tx,
    );
    // Follow rows whose copy of a name is not the user's (migration 2026-11-28T1600_follow_names).
    const renamed = await sql`
      update followers f set follower_name = a.username, followed_name = b.username
      from users a, users b
      where a.id = f.follower_id and b.id = f.followed_id
        and (f.follower_name, f.followed_name) is distinct from (a.username, b.username)`.execute(tx);
    const { rows } = await sql<{ n: string }>`
      select (select count(*) from post_buckets) + (select count(*) from user_buckets) as n`.execute(tx);
    return {
      wrong,
      feedWeeks,
      buckets: Number(rows[0].n),
      follows: Number(renamed.numAffectedRows ?? 0),
    };
  });
}
