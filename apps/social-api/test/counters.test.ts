import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { childProcessEnv } from '@platform/testing';
import { buildTestApp, type TestApp, type TestUser } from './support/app';

/**
 * The counters behind every `total` (posts, posts per user, followers and following per user, users):
 * kept in the transaction of each write, so they equal count(*) after any mix of concurrent writes
 * (API posts, deletions, follows and unfollows racing, bulk statements as `fake` makes them, users
 * deleted with everything they had); the totals the API reports are those counts; and the repair
 * command puts broken counters right.
 */

const run = promisify(execFile);
const APP_DIR = resolve(__dirname, '..');
const CLI = ['--conditions=@platform/source', '--import', 'tsx', 'src/cli.ts'];

let t: TestApp;
let people: TestUser[];

beforeAll(async () => {
  t = await buildTestApp();
  people = [];
  for (let i = 0; i < 10; i++) people.push(await t.register({ username: `member${i}` }));
}, 60_000);
afterAll(() => t?.close());

type Counts = { id: number; posts: number; followers: number; following: number };

/** Every user's counters, and the same numbers by count(*). */
async function countersAndCounts() {
  const { rows } = await sql<{ id: number; stored: Counts; counted: Counts }>`
    select u.id,
      json_build_object('id', u.id, 'posts', u.posts_count, 'followers', u.followers_count, 'following', u.following_count) as stored,
      json_build_object('id', u.id,
        'posts', (select count(*) from posts p where p.user_id = u.id),
        'followers', (select count(*) from followers f where f.followed_id = u.id),
        'following', (select count(*) from followers f where f.follower_id = u.id)) as counted
    from users u order by u.id`.execute(t.database.db);
  const totals = await sql<{ stored: unknown; counted: unknown }>`
    select json_build_object('posts', t.posts::int, 'users', t.users::int) as stored,
      json_build_object('posts', (select count(*) from posts), 'users', (select count(*) from users)) as counted
    from totals t`.execute(t.database.db);
  return {
    stored: { users: rows.map((r) => r.stored), totals: totals.rows[0].stored },
    counted: { users: rows.map((r) => r.counted), totals: totals.rows[0].counted },
  };
}

/** The `total` of every collection the API has, as a remaining user reads them. */
async function reportedTotals(reader: TestUser) {
  const total = async (url: string) => {
    const res = await t.as(reader.token, { method: 'GET', url });
    expect({ url, status: res.statusCode }).toEqual({ url, status: 200 });
    return res.json().pagination.total as number;
  };
  const ids = (await sql<{ id: number }>`select id from users order by id`.execute(t.database.db)).rows;
  const out: Record<string, number> = {
    '/api/posts': await total('/api/posts'),
    '/api/users': await total('/api/users'),
    '/api/feed': await total('/api/feed'),
  };
  for (const { id } of ids)
    for (const list of ['posts', 'followers', 'following'])
      out[`/api/users/${id}/${list}`] = await total(`/api/users/${id}/${list}`);
  return out;
}

/** The same collections' sizes by count(*). */
async function countedTotals(reader: TestUser) {
  const db = t.database.db;
  const n = async (query: ReturnType<typeof sql<{ n: string }>>) =>
    Number((await query.execute(db)).rows[0].n);
  const ids = (await sql<{ id: number }>`select id from users order by id`.execute(db)).rows;
  const out: Record<string, number> = {
    '/api/posts': await n(sql`select count(*) as n from posts`),
    '/api/users': await n(sql`select count(*) as n from users`),
    '/api/feed': await n(sql`select count(*) as n from posts where user_id = ${reader.id}
      or user_id in (select followed_id from followers where follower_id = ${reader.id})`),
  };
  for (const { id } of ids) {
    out[`/api/users/${id}/posts`] = await n(sql`select count(*) as n from posts where user_id = ${id}`);
    out[`/api/users/${id}/followers`] = await n(
      sql`select count(*) as n from followers where followed_id = ${id}`,
    );
    out[`/api/users/${id}/following`] = await n(
      sql`select count(*) as n from followers where follower_id = ${id}`,
    );
  }
  return out;
}

const statusesOf = async (requests: Promise<{ statusCode: number }>[]) =>
  new Set((await Promise.all(requests)).map((r) => r.statusCode));

test('after concurrent posts, deletions, follows and unfollows, bulk writes and user deletions, every counter equals count(*)', async () => {
  const reader = people[0];
  const api = (user: TestUser, method: 'POST' | 'DELETE', url: string, payload?: object) =>
    t.as(user.token, { method, url, ...(payload ? { payload } : {}) });

  // Posts to delete later, and a first round of follows to undo.
  const first = await Promise.all(
    people.flatMap((user) =>
      [0, 1, 2, 3].map((i) => api(user, 'POST', '/api/posts', { text: `first ${i}` })),
    ),
  );
  const firstPosts = first.map((r) => ({ id: r.json().id as number, author: r.json().author.id as number }));
  await Promise.all(
    people.map((user, i) => api(user, 'POST', `/api/me/following/${people[(i + 1) % people.length].id}`)),
  );
  const doomed = people.slice(8); // deleted during the race, with their posts and follows

  // The users deleted make no request meanwhile: one that passed its token check just before the
  // deletion would fail writing for its vanished author (a race of deleting users, not of counters).
  const actors = people.slice(0, 8);
  const db = t.database.db;
  const byId = new Map(people.map((p) => [p.id, p]));
  const statuses = await statusesOf([
    // New posts.
    ...actors.flatMap((user) =>
      [0, 1, 2, 3, 4].map((i) => api(user, 'POST', '/api/posts', { text: `race ${i}` })),
    ),
    // Every first post deleted twice at once: one 204, one 404 (those of deleted users go by cascade).
    ...firstPosts
      .filter(({ author }) => actors.some((a) => a.id === author))
      .flatMap(({ id, author }) => [0, 1].map(() => api(byId.get(author)!, 'DELETE', `/api/posts/${id}`))),
    // Everyone follows everyone (themselves, and the users being deleted, too), each request twice
    // at once: one 204, one 409 (or 404 once the followed user is gone).
    ...actors.flatMap((user) =>
      people.flatMap((other) => [0, 1].map(() => api(user, 'POST', `/api/me/following/${other.id}`))),
    ),
    // The first round's follows undone, twice at once, racing the follows above.
    ...actors.flatMap((user, i) =>
      [0, 1].map(() => api(user, 'DELETE', `/api/me/following/${people[(i + 1) % people.length].id}`)),
    ),
    // Bulk statements, as `fake` writes: many posts and follows in one statement each.
    sql`insert into posts (user_id, text) select ${people[1].id}::int + (g % 3), 'bulk ' || g from generate_series(1, 300) g`
      .execute(db)
      .then(() => ({ statusCode: 201 })),
    // (Not naming the users deleted meanwhile: that would be a foreign key error of this statement.)
    sql`insert into followers (follower_id, followed_id)
        select a.id, b.id from users a cross join users b
        where a.id < b.id and b.id not in (${sql.join(doomed.map((u) => u.id))}) and a.id not in (${sql.join(doomed.map((u) => u.id))})
        on conflict do nothing`
      .execute(db)
      .then(() => ({ statusCode: 201 })),
    sql`delete from posts where id in (select id from posts where text like 'race 0' order by id limit 5)`
      .execute(db)
      .then(() => ({ statusCode: 204 })),
    // Users deleted (there is no API for it): their posts and follows go by cascade.
    sql`delete from users where id in (${sql.join(doomed.map((u) => u.id))})`
      .execute(db)
      .then(() => ({ statusCode: 204 })),
  ]);
  // Never a 500 (a deadlock or a broken counter update would be one).
  expect([...statuses].filter((s) => ![201, 204, 401, 404, 409].includes(s))).toEqual([]);

  const { stored, counted } = await countersAndCounts();
  expect(stored).toEqual(counted);
  expect(stored.users).toHaveLength(people.length - doomed.length);
  expect(await reportedTotals(reader)).toEqual(await countedTotals(reader));
}, 60_000);

test('the repair command puts deliberately broken counters right, and the totals are what they were', async () => {
  const reader = people[0];
  const before = await reportedTotals(reader);
  const db = t.database.db;
  await sql`update users set posts_count = posts_count + 7, followers_count = 0 where id = ${people[1].id}`.execute(
    db,
  );
  await sql`update users set following_count = following_count - 2 where id = ${people[2].id}`.execute(db);
  await sql`update totals set posts = posts + 100, users = 0`.execute(db);
  // The API reads the counters (no count(*) behind them), so it now reports the broken numbers.
  const broken = await reportedTotals(reader);
  expect(broken['/api/posts']).toBe(before['/api/posts'] + 100);
  expect(broken[`/api/users/${people[1].id}/posts`]).toBe(before[`/api/users/${people[1].id}/posts`] + 7);

  const env = childProcessEnv(t.config.database as { url: string; schema: string }, { LOG_LEVEL: 'silent' });
  const repair = () => run(process.execPath, [...CLI, 'repair-counters'], { cwd: APP_DIR, env });
  expect((await repair()).stdout).toBe('Counters repaired: 2 users, totals repaired.\n');
  const { stored, counted } = await countersAndCounts();
  expect(stored).toEqual(counted);
  expect(await reportedTotals(reader)).toEqual(before);
  // Nothing left to repair.
  expect((await repair()).stdout).toBe('Counters repaired: 0 users, totals were right.\n');
}, 60_000);
