import { sql, type Kysely } from 'kysely';
import type { SocialDatabase } from './schema';

export interface CounterRepair {
  /** Users whose posts, followers or following count was wrong. */
  users: number;
  /** Whether the totals (posts, users) were wrong (or missing). */
  totals: boolean;
}

/**
 * The repair of the counters the triggers keep (migration 2026-11-25T1000_counters): recomputed
 * from count(*), only the wrong ones written. Writers wait meanwhile (readers do not), so the
 * counts cannot race a post or a follow; one transaction, so a failure changes nothing.
 */
export function repairCounters(db: Kysely<SocialDatabase>): Promise<CounterRepair> {
  return db.transaction().execute(async (tx) => {
    // SHARE ROW EXCLUSIVE: blocks inserts, updates and deletes (and another repair), not reads. In
    // the order the API's writers take their tables (a post: posts, then totals and users; a follow:
    // followers, then users; a registration: users, then totals), so the repair waits for them
    // instead of deadlocking with one.
    await sql`lock table posts, followers, users, totals in share row exclusive mode`.execute(tx);
    const users = await sql`
      with actual as (
        select u.id, coalesce(p.n, 0)::int as posts, coalesce(fr.n, 0)::int as followers, coalesce(fg.n, 0)::int as following
        from users u
        left join (select user_id, count(*) as n from posts group by user_id) p on p.user_id = u.id
        left join (select followed_id, count(*) as n from followers group by followed_id) fr on fr.followed_id = u.id
        left join (select follower_id, count(*) as n from followers group by follower_id) fg on fg.follower_id = u.id
      )
      update users set posts_count = actual.posts, followers_count = actual.followers, following_count = actual.following
      from actual
      where users.id = actual.id
        and (users.posts_count, users.followers_count, users.following_count)
            is distinct from (actual.posts, actual.followers, actual.following)`.execute(tx);
    const totals = await sql`
      insert into totals (id, posts, users) values (true, (select count(*) from posts), (select count(*) from users))
      on conflict (id) do update set posts = excluded.posts, users = excluded.users
      where (totals.posts, totals.users) is distinct from (excluded.posts, excluded.users)`.execute(tx);
    return { users: Number(users.numAffectedRows ?? 0), totals: Number(totals.numAffectedRows ?? 0) > 0 };
  });
}
