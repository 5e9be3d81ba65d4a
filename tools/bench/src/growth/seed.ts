// The growth benchmark's data, grown in place from one size to the next: users from social-api's
// `fake users`, posts from its `fake posts` plus the star's share, and the follows that give the
// follow lists and the feed their depth, in SQL (`fake users` makes 0–5 follows a user).
import { performance } from 'node:perf_hooks';
import { sql, type Kysely } from 'kysely';
import { databaseEnv, withDatabase, type BenchDatabase } from '../lib/database';
import { round } from '../lib/numbers';
import { fake, spreadOver } from '../social-setup';

/** The share of the posts the star writes: its own posts are a collection with depth at every size. */
export const STAR_SHARE = 0.05;

/** Who the collections belong to. */
export interface Cast {
  /** The first fake user: followed by every other user, writes STAR_SHARE of the posts. */
  star: number;
  /** The fake users the bench user follows (spread over the ids; the star among them). */
  followed: number[];
}

/** The users (`fake users`); the star is the first of them, the followed ones spread over them. */
export async function seedUsers(
  config: BenchDatabase['config'],
  users: number,
  follows: number,
): Promise<Cast & { seconds: number | null }> {
  const seconds = await fake('users', users, databaseEnv(config, { LOG_LEVEL: 'warn' }));
  const ids = await withDatabase(config, async (db) =>
    (await sql<{ id: number }>`select id from users order by id`.execute(db)).rows.map((r) => r.id),
  );
  return { star: ids[0], followed: spreadOver(ids, follows), seconds };
}

/**
 * Every user follows the star, and `me` (the bench user, registered over HTTP) follows `followed`:
 * one statement each, the counters kept by the service's triggers.
 */
export async function seedFollows(config: BenchDatabase['config'], cast: Cast, me: number): Promise<void> {
  await withDatabase(config, async (db) => {
    await sql`insert into followers (follower_id, followed_id)
      select id, ${cast.star}::int from users where id <> ${cast.star}::int on conflict do nothing`.execute(
      db,
    );
    await sql`insert into followers (follower_id, followed_id)
      select ${me}::int, unnest(${cast.followed}::int[]) on conflict do nothing`.execute(db);
    await sql`analyze followers, users`.execute(db);
  });
}

const countPosts = async (db: Kysely<unknown>) =>
  (
    await sql<{ posts: number; last: number }>`select count(*)::int as posts, coalesce(max(id), 0) as last
      from posts`.execute(db)
  ).rows[0];

/**
 * Grows the posts to `target`: `fake posts` for all but STAR_SHARE of the new ones (random authors,
 * dated this year), then the `star`'s share in SQL, with the texts of the new fake posts and their
 * own random times this year. Returns the posts there are and the seconds it took; fewer posts than
 * there are already is an error (the sizes grow one schema in place).
 */
export async function growPosts(
  config: BenchDatabase['config'],
  target: number,
  star: number,
): Promise<{ posts: number; seconds: number | null }> {
  const started = performance.now();
  const before = await withDatabase(config, countPosts);
  const added = target - before.posts;
  if (added < 0) throw new Error(`--sizes must grow: ${before.posts} posts already, asked for ${target}`);
  const starPosts = Math.round(added * STAR_SHARE);
  if (added - starPosts > 0)
    await fake('posts', added - starPosts, databaseEnv(config, { LOG_LEVEL: 'warn' }));
  const after = await withDatabase(config, async (db) => {
    await sql`insert into posts (user_id, text, timestamp)
      select ${star}::int, text,
        date_trunc('year', now()) + random() * (now() - date_trunc('year', now()))
      from posts where id > ${before.last}::int order by id limit ${starPosts}::int`.execute(db);
    await sql`analyze posts, users`.execute(db);
    return countPosts(db);
  });
  return { posts: after.posts, seconds: round((performance.now() - started) / 1000, 1) };
}
