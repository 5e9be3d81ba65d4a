import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { faker } from '@faker-js/faker';
import { CompiledQuery, sql, type RawBuilder } from 'kysely';
import { childProcessEnv } from '@platform/testing';
import { repairPositions } from '../src/db/positions';
import { explainAnalyze, nodes } from './support/plans';
import { buildTestApp, type TestApp, type TestUser } from './support/app';

/**
 * Positions of posts (migration 2026-11-28T1400_post_positions): the pages of all posts and of one
 * author's posts find their position through bucket counts the triggers keep. Whatever mix of writes
 * came before (posts added in bulk and one by one, deleted, moved in time, their authors deleted),
 * and while writers race, every page in both modes equals a plain ordered query with OFFSET; a deep
 * page reads a few buckets and one bucket's index entries, never the posts before it; the repair
 * command restores a broken structure.
 */

const run = promisify(execFile);
const APP_DIR = resolve(__dirname, '..');
const CLI = ['--conditions=@platform/source', '--import', 'tsx', 'src/cli.ts'];
/** Small buckets, so that a few hundred posts make many, and writes cut them often. */
const BUCKET_ROWS = 7;

type Page = {
  pagination: { offset: number; count: number; total: number; limit: number };
  data: { id: number; timestamp: string; author: { id: number } }[];
};

let t: TestApp;
let reader: TestUser;

beforeAll(async () => {
  t = await buildTestApp();
  reader = await t.register({ username: 'reader' });
  await sql`update totals set post_bucket_rows = ${BUCKET_ROWS}`.execute(t.database.db);
}, 60_000);
afterAll(() => t?.close());

const db = () => t.database.db;

async function page(url: string): Promise<Page> {
  const res = await t.as(reader.token, { method: 'GET', url });
  expect({ url, status: res.statusCode }).toEqual({ url, status: 200 });
  return res.json<Page>();
}

/**
 * The plan (EXPLAIN ANALYZE, with buffers) of the statement matching `match` that `request` made
 * the app run: its root and all its nodes.
 */
async function planOf(request: () => Promise<unknown>, match: RegExp) {
  const from = t.statements.length;
  await request();
  const statement = (t.statements.slice(from) as CompiledQuery[]).find((q) => match.test(q.sql));
  expect(statement).toBeDefined();
  const root = await explainAnalyze(db(), statement!, { buffers: true });
  return { root, plan: nodes(root) };
}

/** A collection of posts: its URL and which posts are in it. */
type Collection = { url: string; scope: RawBuilder<unknown> };
/** All posts (null), one author's, or `{ feedOf }`: a user's own posts and those of everyone they follow. */
const collection = (of: number | null | { feedOf: number }): Collection =>
  of === null
    ? { url: '/api/posts', scope: sql`true` }
    : typeof of === 'number'
      ? { url: `/api/users/${of}/posts`, scope: sql`p.user_id = ${of}` }
      : {
          url: '/api/feed',
          scope: sql`p.user_id in (select followed_id from followers where follower_id = ${of.feedOf} union select ${of.feedOf})`,
        };

/** What a page must be: the scope's posts by a plain ordered query, every row counted. */
async function expectedPage(
  { scope }: Collection,
  limit: number,
  mode: { offset: number } | { after: string },
) {
  const total = Number(
    (await sql<{ n: string }>`select count(*) as n from posts p where ${scope}`.execute(db())).rows[0].n,
  );
  if ('offset' in mode) {
    const { rows } = await sql<{ id: number }>`
      select p.id from posts p where ${scope} order by p.timestamp desc, p.id desc offset ${mode.offset} limit ${limit}`.execute(
      db(),
    );
    return { offset: mode.offset, total, ids: rows.map((r) => r.id) };
  }
  const { rows } = await sql<{ id: number }>`
    select p.id from posts p where ${scope} and p.timestamp < ${mode.after}::timestamptz
    order by p.timestamp desc, p.id desc limit ${limit}`.execute(db());
  const before = await sql<{ n: string }>`
    select count(*) as n from posts p where ${scope} and p.timestamp >= ${mode.after}::timestamptz`.execute(
    db(),
  );
  return { offset: Number(before.rows[0].n), total, ids: rows.map((r) => r.id) };
}

/** Pages of a scope at many depths, in both modes, against the plain query. */
async function expectExactPages(of: number | null | { feedOf: number }) {
  const pages = collection(of);
  const base = pages.url;
  const { total } = (await expectedPage(pages, 1, { offset: 0 })) as { total: number };
  const offsets = new Set([
    0,
    1,
    total - 1,
    total - 2,
    ...faker.helpers.multiple(() => faker.number.int({ max: total }), { count: 6 }),
  ]);
  for (const offset of [...offsets].filter((o) => o >= 0 && (o < total || o === 0))) {
    const limit = faker.number.int({ min: 1, max: 25 });
    const got = await page(`${base}?offset=${offset}&limit=${limit}`);
    const want = await expectedPage(pages, limit, { offset });
    expect({
      url: `${base}?offset=${offset}&limit=${limit}`,
      ...got.pagination,
      ids: got.data.map((p) => p.id),
    }).toEqual({
      url: `${base}?offset=${offset}&limit=${limit}`,
      limit,
      offset: want.offset,
      count: want.ids.length,
      total: want.total,
      ids: want.ids,
    });
  }
  const { rows } = await sql<{ ts: Date }>`
    select p.timestamp as ts from posts p where ${pages.scope} order by random() limit 4`.execute(db());
  for (const after of [
    ...rows.map((r) => r.ts.toISOString()),
    '2020-01-01T00:00:00.000Z',
    '2100-01-01T00:00:00.000Z',
  ]) {
    const got = await page(`${base}?after=${encodeURIComponent(after)}`);
    const want = await expectedPage(pages, 25, { after });
    expect({ after, ...got.pagination, ids: got.data.map((p) => p.id) }).toEqual({
      after,
      limit: 25,
      offset: want.offset,
      count: want.ids.length,
      total: want.total,
      ids: want.ids,
    });
  }
}

/** The buckets against the posts: each count, and each scope's sum (see `repairPositions`). */
async function bucketProblems() {
  const { rows } = await sql<{ scope: number; lo_id: number; n: number; actual: string }>`
    with b as (
      select scope, lo_ts, lo_id, n, lead(lo_ts, 1, 'infinity') over w as hi_ts, lead(lo_id, 1, 0) over w as hi_id
      from post_buckets window w as (partition by scope order by lo_ts, lo_id)
    )
    select b.scope, b.lo_id, b.n, (
      select count(*) from posts p
      where (b.scope = 0 or p.user_id = b.scope) and (p.timestamp, p.id) >= (b.lo_ts, b.lo_id) and (p.timestamp, p.id) < (b.hi_ts, b.hi_id)
    ) as actual from b`.execute(db());
  const wrong = rows.filter((r) => r.n !== Number(r.actual));
  const sums = await sql<{ scope: number; posts: string; counted: string | null }>`
    select s.scope, s.posts, (select sum(n) from post_buckets b where b.scope = s.scope) as counted
    from (select 0 as scope, count(*) as posts from posts union all select user_id, count(*) from posts group by user_id) s`.execute(
    db(),
  );
  const users = await sql<{ lo: number }>`
    select lo from (select (id >> 10) << 10 as lo, count(*) as n from users group by 1) actual
    full join user_buckets b using (lo) where actual.n is distinct from b.n`.execute(db());
  const weeks = await sql<{ user_id: number; week: Date }>`
    select user_id, week from (
      select user_id, date_bin('7 days', timestamp, '2000-01-03 00:00:00+00') as week, count(*) as n from posts group by 1, 2
    ) actual full join post_weeks w using (user_id, week) where actual.n is distinct from w.n`.execute(db());
  return {
    wrongBuckets: wrong,
    wrongScopes: sums.rows.filter((r) => Number(r.counted ?? 0) !== Number(r.posts)),
    oversized: rows.filter((r) => r.n > 2 * BUCKET_ROWS).length,
    wrongUserRanges: users.rows.map((r) => r.lo),
    wrongWeeks: weeks.rows,
  };
}

const expectNoBucketProblems = async () =>
  expect(await bucketProblems()).toEqual({
    wrongBuckets: [],
    wrongScopes: [],
    oversized: 0,
    wrongUserRanges: [],
    wrongWeeks: [],
  });

/** Posts of `authors` at random times in 2025, some sharing a millisecond (ties sort by id). */
async function insertPosts(authors: number[], count: number) {
  const times = faker.helpers.multiple(() => faker.date.between({ from: '2025-01-01', to: '2025-12-31' }), {
    count,
  });
  const tied = times.map((time, i) => (i > 0 && faker.datatype.boolean(0.2) ? times[i - 1] : time));
  await db()
    .insertInto('posts')
    .values(
      tied.map((timestamp, i) => ({
        user_id: faker.helpers.arrayElement(authors),
        text: `post ${i}`,
        timestamp,
      })),
    )
    .execute();
}

test('after any mix of writes, every page in both modes equals the plain ordered query', async () => {
  faker.seed(20261128);
  const authors: number[] = [];
  for (let i = 0; i < 4; i++) authors.push((await t.register({ username: `author${i}` })).id);
  await insertPosts(authors, 300); // one statement: the first buckets are cut from it
  // The reader's feed: their own posts (below) and two of the authors'.
  for (const followed of authors.slice(0, 2))
    expect(
      (await t.as(reader.token, { method: 'POST', url: `/api/me/following/${followed}` })).statusCode,
    ).toBe(204);
  for (let round = 0; round < 6; round++) {
    // One by one through the API (the newest bucket grows and is cut), in bulk, deleted, moved.
    for (let i = 0; i < 10; i++) {
      const res = await t.as(reader.token, {
        method: 'POST',
        url: '/api/posts',
        payload: { text: `live ${round}.${i}` },
      });
      expect(res.statusCode).toBe(201);
    }
    await insertPosts(authors, faker.number.int({ min: 1, max: 40 }));
    await sql`delete from posts where id in (select id from posts order by random() limit ${faker.number.int({ min: 1, max: 30 })})`.execute(
      db(),
    );
    await sql`update posts set timestamp = timestamp - interval '40 days' where id in (select id from posts order by random() limit 5)`.execute(
      db(),
    );
    await sql`update posts set text = text || '!' where id in (select id from posts order by random() limit 5)`.execute(
      db(),
    );
    await expectNoBucketProblems();
    await expectExactPages(null);
    await expectExactPages(faker.helpers.arrayElement(authors));
    await expectExactPages({ feedOf: reader.id });
  }
  // An author deleted with their posts (a cascade), then every post at once.
  await db().deleteFrom('users').where('id', '=', authors[0]).execute();
  await expectNoBucketProblems();
  await expectExactPages(null);
  await sql`truncate posts`.execute(db());
  expect(await db().selectFrom('post_buckets').selectAll().execute()).toEqual([]);
  await insertPosts(authors.slice(1), 50);
  await expectExactPages(null);
  await expectExactPages(authors[1]);
}, 120_000);

test('writers racing each other and readers of deep pages lose no count', async () => {
  faker.seed(7);
  const writers = await Promise.all([0, 1, 2].map((i) => t.register({ username: `racer${i}` })));
  await insertPosts(
    writers.map((w) => w.id),
    200,
  );
  const deep: Page[] = [];
  const write = (w: TestUser, i: number) =>
    t.as(w.token, { method: 'POST', url: '/api/posts', payload: { text: `race ${i}` } }).then((res) => {
      expect(res.statusCode).toBe(201);
    });
  const remove = () =>
    sql`delete from posts where id = (select id from posts order by random() limit 1)`.execute(db());
  // Posts moved in time into one minute: they leave their buckets for the one of that minute, which is
  // cut again and again. No counter changes, so only the buckets' own lock keeps two moves from
  // counting in a bucket the other is cutting.
  const move = () =>
    sql`update posts set timestamp = ${faker.date.between({ from: '2025-06-01T00:00:00Z', to: '2025-06-01T00:01:00Z' })}
        where id = (select id from posts order by random() limit 1)`.execute(db());
  const read = async () => {
    const { pagination } = await page('/api/posts?limit=1');
    deep.push(await page(`/api/posts?offset=${Math.max(0, pagination.total - 30)}`));
  };
  await Promise.all(
    Array.from({ length: 240 }, (_, i) =>
      [read, remove, move, move, () => write(writers[i % 3], i)][i % 5](),
    ),
  );
  await expectNoBucketProblems();
  // Each deep page is in order and as long as its total allows.
  for (const p of deep) {
    const keys = p.data.map((post) => [post.timestamp, post.id] as const);
    const sorted = [...keys].sort((a, b) => (a[0] === b[0] ? b[1] - a[1] : a[0] < b[0] ? 1 : -1));
    expect(keys).toEqual(sorted);
    expect(p.pagination.count).toBe(Math.min(25, p.pagination.total - p.pagination.offset));
  }
  await expectExactPages(null);
  await expectExactPages(writers[0].id);
}, 120_000);

test('a deep page reads a few buckets and one bucket of the index, sorting nothing but the page', async () => {
  await sql`update totals set post_bucket_rows = 100`.execute(db());
  const author = await t.register({ username: 'deep' });
  await insertPosts([author.id], 3000);
  await repairPositions(db()); // cut at the new size
  await sql`analyze posts`.execute(db());
  await sql`analyze post_buckets`.execute(db());
  const { total } = (await page('/api/posts?limit=1')).pagination;
  for (const url of [
    `/api/posts?offset=${Math.floor(total * 0.9)}`,
    `/api/users/${author.id}/posts?offset=2700`,
  ]) {
    const { root, plan } = await planOf(() => page(url), /post_buckets/);
    expect(plan.some((n) => n['Relation Name'] === 'post_buckets')).toBe(true);
    // Sorted: the page once joined, and at most the scope's bucket counts; never posts beyond the page.
    for (const sort of plan.filter((n) => n['Node Type'] === 'Sort'))
      if (nodes(sort).some((n) => n['Relation Name'] === 'posts'))
        expect(sort['Actual Rows']).toBeLessThanOrEqual(25);
    // The walk inside the bucket: at most one bucket (cut at twice its size) and the page.
    const walked = plan.filter((n) => n['Relation Name'] === 'posts' && /Index/.test(n['Node Type']));
    expect(
      Math.max(...walked.map((n) => (n['Actual Rows'] ?? 0) * (n['Actual Loops'] ?? 1))),
    ).toBeLessThanOrEqual(2 * 100 + 25);
    expect((root['Shared Hit Blocks'] ?? 0) + (root['Shared Read Blocks'] ?? 0)).toBeLessThan(300);
  }
}, 120_000);

test('the repair command restores a deliberately broken structure', async () => {
  await sql`update post_buckets set n = n + 3 where scope = 0 and lo_id = (select max(lo_id) from post_buckets where scope = 0)`.execute(
    db(),
  );
  await sql`delete from post_buckets where scope = (select max(scope) from post_buckets)`.execute(db());
  await sql`update user_buckets set n = n + 1 where lo = (select min(lo) from user_buckets)`.execute(db());
  // A follow row with a stale copy of a name (written with the triggers off, say).
  const [fan, star] = await Promise.all([
    t.register({ username: 'stale-fan' }),
    t.register({ username: 'stale-star' }),
  ]);
  expect((await t.as(fan.token, { method: 'POST', url: `/api/me/following/${star.id}` })).statusCode).toBe(
    204,
  );
  await sql`update followers set follower_name = 'zzz-stale' where follower_id = ${fan.id}`.execute(db());
  expect(await staleFollowNames()).toHaveLength(1);
  await sql`update post_weeks set n = n + 2 where (user_id, week) = (select user_id, max(week) from post_weeks group by 1 order by 1 limit 1)`.execute(
    db(),
  );
  // One bucket counts 3 too many (so does its scope, all posts); one author's posts have no bucket;
  // one range of user ids counts one user too many; one author's week two posts too many.
  const broken = await bucketProblems();
  expect([
    broken.wrongBuckets.length,
    broken.wrongScopes.length,
    broken.wrongUserRanges.length,
    broken.wrongWeeks.length,
  ]).toEqual([1, 2, 1, 1]);
  const env = childProcessEnv(t.config.database as { url: string; schema: string }, { LOG_LEVEL: 'silent' });
  const repair = () => run(process.execPath, [...CLI, 'repair-positions'], { cwd: APP_DIR, env });
  expect((await repair()).stdout).toMatch(
    /^Positions repaired: 5 wrong buckets found, \d+ now; 1 follow renamed\.\n$/,
  );
  expect(await bucketProblems()).toMatchObject({
    wrongBuckets: [],
    wrongScopes: [],
    wrongUserRanges: [],
    wrongWeeks: [],
  });
  expect(await staleFollowNames()).toEqual([]);
  await expectExactPages(null);
  expect((await repair()).stdout).toMatch(
    /^Positions repaired: 0 wrong buckets found, \d+ now; 0 follows renamed\.\n$/,
  );
}, 120_000);

/** An offset page of users against the whole list it is a page of, in order. */
async function expectUserPage(
  url: string,
  { offset, limit }: { offset: number; limit: number },
  all: { id: number }[],
) {
  const got = (await page(url)) as unknown as { pagination: Page['pagination']; data: { id: number }[] };
  expect({ url, ...got.pagination, ids: got.data.map((u) => u.id) }).toEqual({
    url,
    limit,
    offset,
    count: Math.min(limit, all.length - offset),
    total: all.length,
    ids: all.slice(offset, offset + limit).map((r) => r.id),
  });
}

/** Pages of the list of all users at many depths against the plain query by id. */
async function expectExactUserPages() {
  const { rows: ids } = await sql<{ id: number }>`select id from users order by id`.execute(db());
  const total = ids.length;
  const offsets = new Set([
    0,
    total - 1,
    ...faker.helpers.multiple(() => faker.number.int({ max: total - 1 }), { count: 8 }),
  ]);
  for (const offset of offsets) {
    const limit = faker.number.int({ min: 1, max: 25 });
    await expectUserPage(`/api/users?offset=${offset}&limit=${limit}`, { offset, limit }, ids);
  }
}

test('the list of all users: after registrations, bulk inserts across many ranges of ids, deletions and an id changed by hand, every page equals the plain query', async () => {
  faker.seed(1500);
  // Ids spread over many ranges of 1,024 (as years of sign-ups and deletions leave them).
  const spread = faker.helpers.uniqueArray(() => faker.number.int({ min: 2000, max: 60_000 }), 400);
  await sql`insert into users (id, username, email)
    select id, 'spread' || id, 'spread' || id || '@example.com' from unnest(${spread}::int[]) id`.execute(
    db(),
  );
  await Promise.all(Array.from({ length: 20 }, (_, i) => t.register({ username: `joiner${i}` })));
  await sql`delete from users where id in (select id from users where username like 'spread%' order by random() limit 60)`.execute(
    db(),
  );
  await sql`update users set id = 70000 where id = (select max(id) from users where username like 'spread%')`.execute(
    db(),
  );
  expect((await bucketProblems()).wrongUserRanges).toEqual([]);
  await expectExactUserPages();
  // Registrations racing deletions of users in the same ranges.
  await Promise.all([
    ...Array.from({ length: 20 }, (_, i) => t.register({ username: `racer-user${i}` })),
    ...Array.from({ length: 20 }, () =>
      sql`delete from users where id = (select id from users where username like 'spread%' order by random() limit 1)`.execute(
        db(),
      ),
    ),
  ]);
  expect((await bucketProblems()).wrongUserRanges).toEqual([]);
  await expectExactUserPages();
}, 120_000);

/** A follow list's pages at many depths in both modes against the plain query (a join, sorted by name). */
async function expectExactFollowPages(user: number, direction: 'followers' | 'following') {
  const [mine, theirs] =
    direction === 'followers' ? ['followed_id', 'follower_id'] : ['follower_id', 'followed_id'];
  const { rows: names } = await sql<{ id: number; username: string }>`
    select u.id, u.username from followers f join users u on u.id = f.${sql.raw(theirs)}
    where f.${sql.raw(mine)} = ${user} order by u.username`.execute(db());
  const total = names.length;
  const base = `/api/users/${user}/${direction}`;
  const offsets = new Set([
    0,
    total - 1,
    ...faker.helpers.multiple(() => faker.number.int({ max: total }), { count: 5 }),
  ]);
  for (const offset of [...offsets].filter((o) => o >= 0 && (o < total || o === 0))) {
    const limit = faker.number.int({ min: 1, max: 25 });
    await expectUserPage(`${base}?offset=${offset}&limit=${limit}`, { offset, limit }, names);
  }
  for (const after of [...faker.helpers.arrayElements(names, 3).map((n) => n.username), '', 'zzzz']) {
    const url = `${base}?after=${encodeURIComponent(after)}`;
    const got = (await page(url)) as unknown as { pagination: Page['pagination']; data: { id: number }[] };
    const rest = names.filter((n) => n.username > after);
    expect({ url, ...got.pagination, ids: got.data.map((u) => u.id) }).toEqual({
      url,
      limit: 25,
      offset: total - rest.length,
      count: Math.min(25, rest.length),
      total,
      ids: rest.slice(0, 25).map((r) => r.id),
    });
  }
}

/** Follow rows whose copy of a name is not the user's name. */
async function staleFollowNames() {
  const { rows } = await sql<{ follower_id: number; followed_id: number }>`
    select f.follower_id, f.followed_id from followers f
    join users a on a.id = f.follower_id join users b on b.id = f.followed_id
    where f.follower_name <> a.username or f.followed_name <> b.username`.execute(db());
  return rows;
}

test('follow lists: after follows, unfollows and renames racing each other, every page in both modes equals the plain query by name', async () => {
  faker.seed(1600);
  const crowd = await Promise.all(
    Array.from({ length: 40 }, (_, i) => t.register({ username: `crowd${i}` })),
  );
  const star = crowd[0];
  const follow = (a: TestUser, b: TestUser) =>
    t.as(a.token, { method: 'POST', url: `/api/me/following/${b.id}` });
  const unfollow = (a: TestUser, b: TestUser) =>
    t.as(a.token, { method: 'DELETE', url: `/api/me/following/${b.id}` });
  const rename = (a: TestUser) =>
    t.as(a.token, {
      method: 'PUT',
      url: '/api/me',
      payload: { username: `renamed-${faker.string.alphanumeric(8)}` },
    });
  for (const fan of crowd.slice(1)) expect((await follow(fan, star)).statusCode).toBe(204);
  for (const other of crowd.slice(1, 30)) expect((await follow(star, other)).statusCode).toBe(204);
  // Renames of both sides of follows racing follows and unfollows of the same users.
  const racing = await Promise.all(
    Array.from({ length: 120 }, (_, i) => {
      const a = faker.helpers.arrayElement(crowd);
      const b = faker.helpers.arrayElement(crowd.filter((u) => u !== a));
      // A rename always succeeds; a follow of one followed already, or an unfollow of one not
      // followed, is refused (409) as the API refuses it alone.
      const [run, statuses] = (
        [
          [() => rename(a), [200]],
          [() => follow(a, b), [204, 409]],
          [() => unfollow(a, b), [204, 409]],
          [() => rename(star), [200]],
        ] as const
      )[i % 4];
      return run().then((res) => ({ statuses, status: res.statusCode }));
    }),
  );
  for (const { statuses, status } of racing) expect(statuses).toContain(status);
  expect(await staleFollowNames()).toEqual([]);
  await expectExactFollowPages(star.id, 'followers');
  await expectExactFollowPages(star.id, 'following');
  await expectExactFollowPages(crowd[7].id, 'followers');
}, 120_000);

test("a deep follow-list page walks the follow rows' name index, joins only the page's users and sorts nothing", async () => {
  const star = await t.register({ username: 'followed-by-many' });
  await sql`insert into users (id, username, email) select 200000 + g, 'fan-' || g, 'fan-' || g || '@example.com' from generate_series(1, 3000) g`.execute(
    db(),
  );
  await sql`insert into followers (follower_id, followed_id) select id, ${star.id} from users where username like 'fan-%'`.execute(
    db(),
  );
  await sql`vacuum analyze followers`.execute(db()); // index-only, as on a live table autovacuum keeps
  await sql`analyze users`.execute(db());
  for (const url of [
    `/api/users/${star.id}/followers?offset=2700`,
    `/api/users/${star.id}/followers?after=fan-2700`,
  ]) {
    const { plan } = await planOf(() => page(url), /from "followers"/);
    for (const sort of plan.filter((n) => n['Node Type'] === 'Sort'))
      expect(sort['Actual Rows']).toBeLessThanOrEqual(25);
    // Users read one by one: the page's 25 and the owner's counters, never the 3,000 followers.
    const users = plan.filter((n) => n['Relation Name'] === 'users');
    for (const n of users) expect(n['Actual Rows']).toBeLessThanOrEqual(1);
    expect(
      users.reduce((sum, n) => sum + (n['Actual Rows'] ?? 0) * (n['Actual Loops'] ?? 1), 0),
    ).toBeLessThanOrEqual(30);
    // The members in order come from the name index (the count may read the small table whole).
    expect(
      plan.filter((n) => n['Index Name'] === 'followers_followed_name_idx').length,
    ).toBeGreaterThanOrEqual(1);
  }
}, 120_000);

test("a deep page of the feed sorts the feed's posts of the weeks that hold it, not the whole feed", async () => {
  const viewer = await t.register({ username: 'feed-reader' });
  const followed = await Promise.all([0, 1, 2].map((i) => t.register({ username: `weekly${i}` })));
  for (const f of followed)
    expect((await t.as(viewer.token, { method: 'POST', url: `/api/me/following/${f.id}` })).statusCode).toBe(
      204,
    );
  // 3,000 posts over about 60 weeks: some 50 a week in this feed.
  await sql`insert into posts (user_id, text, timestamp)
    select (${sql.val(followed.map((f) => f.id))}::int[])[1 + g % 3], 'weekly ' || g,
           timestamptz '2024-01-01 00:00:00+00' + g * interval '3 hours'
    from generate_series(1, 3000) g`.execute(db());
  await sql`vacuum analyze posts`.execute(db());
  await sql`analyze post_weeks`.execute(db());
  const feed = (url: string) => t.as(viewer.token, { method: 'GET', url });
  for (const url of ['/api/feed?offset=2700', '/api/feed?after=2024-02-15T00:00:00Z']) {
    const { plan } = await planOf(async () => expect((await feed(url)).statusCode).toBe(200), /post_weeks/);
    // Sorted: at most the posts of the weeks holding the page (about 50 a week here), never the 3,000.
    for (const sort of plan.filter((n) => n['Node Type'] === 'Sort'))
      if (nodes(sort).some((n) => n['Relation Name'] === 'posts'))
        expect(sort['Actual Rows']).toBeLessThanOrEqual(200);
  }
}, 120_000);
