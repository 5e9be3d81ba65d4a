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

async function page(url: string, viewer: TestUser = reader): Promise<Page> {
  const res = await t.as(viewer.token, { method: 'GET', url });
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

/** A collection of posts: its URL, who reads it and which posts are in it. */
type Collection = { url: string; viewer?: TestUser; scope: RawBuilder<unknown> };
/**
 * All posts (null), one author's, or `{ feedOf }`: a user's own posts and those of everyone they
 * follow (the feed of whoever asks: that user).
 */
const collection = (of: number | null | { feedOf: TestUser }): Collection =>
  of === null
    ? { url: '/api/posts', scope: sql`true` }
    : typeof of === 'number'
      ? { url: `/api/users/${of}/posts`, scope: sql`p.user_id = ${of}` }
      : {
          url: '/api/feed',
          viewer: of.feedOf,
          scope: sql`p.user_id in (select followed_id from followers where follower_id = ${of.feedOf.id} union select ${of.feedOf.id})`,
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
async function expectExactPages(of: number | null | { feedOf: TestUser }) {
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
    const got = await page(`${base}?offset=${offset}&limit=${limit}`, pages.viewer);
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
    const got = await page(`${base}?after=${encodeURIComponent(after)}`, pages.viewer);
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
  // Each feed's weeks counted from the posts themselves (not from post_weeks): its owner's and those
  // of everyone the owner follows, a set (`union`), so a user following themself counts once.
  const feeds = await sql<{ user_id: number; week: Date; n: number | null; actual: string | null }>`
    select user_id, week, f.n, actual.n as actual from (
      select a.owner as user_id, date_bin('7 days', p.timestamp, '2000-01-03 00:00:00+00') as week, count(*) as n
      from (select id as owner, id as author from users union select follower_id, followed_id from followers) a
      join posts p on p.user_id = a.author
      group by 1, 2
    ) actual full join feed_weeks f using (user_id, week) where actual.n is distinct from f.n`.execute(db());
  return {
    wrongBuckets: wrong,
    wrongScopes: sums.rows.filter((r) => Number(r.counted ?? 0) !== Number(r.posts)),
    oversized: rows.filter((r) => r.n > 2 * BUCKET_ROWS).length,
    wrongUserRanges: users.rows.map((r) => r.lo),
    wrongWeeks: weeks.rows,
    wrongFeedWeeks: feeds.rows,
  };
}

const expectNoBucketProblems = async () =>
  expect(await bucketProblems()).toEqual({
    wrongBuckets: [],
    wrongScopes: [],
    oversized: 0,
    wrongUserRanges: [],
    wrongWeeks: [],
    wrongFeedWeeks: [],
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

/** Whom `user` follows. */
const followedBy = async (user: number) =>
  (
    await sql<{ id: number }>`select followed_id as id from followers where follower_id = ${user}`.execute(
      db(),
    )
  ).rows.map((r) => r.id);

/** Follows `other` when `fan` does not, else unfollows it, through the API. */
async function toggleFollow(fan: TestUser, other: number) {
  const following = (await followedBy(fan.id)).includes(other);
  const res = await t.as(fan.token, {
    method: following ? 'DELETE' : 'POST',
    url: `/api/me/following/${other}`,
  });
  expect({ fan: fan.id, other, following, status: res.statusCode }).toEqual({
    fan: fan.id,
    other,
    following,
    status: 204,
  });
}

test('after any mix of writes, every page in both modes equals the plain ordered query', async () => {
  faker.seed(20261128);
  const authorUsers: TestUser[] = [];
  for (let i = 0; i < 4; i++) authorUsers.push(await t.register({ username: `author${i}` }));
  const authors = authorUsers.map((a) => a.id);
  await insertPosts(authors, 300); // one statement: the first buckets are cut from it
  // The reader's feed: their own posts (below) and two of the authors'.
  for (const followed of authors.slice(0, 2)) await toggleFollow(reader, followed);
  // A second feed, of an author who follows in bulk (SQL, many rows a statement), themself among them.
  const [fan] = authorUsers.slice(1);
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
    // Follows and unfollows: the reader's through the API (following themself too, at times)...
    await toggleFollow(reader, faker.helpers.arrayElement([...authors, reader.id]));
    // ... and the fan's several at once, themself among them, or all taken back but one.
    if (round % 2 === 0)
      await sql`insert into followers (follower_id, followed_id)
        select ${fan.id}::int, id from users where id = any(${faker.helpers.arrayElements([...authors, reader.id])}::int[])
        on conflict do nothing`.execute(db());
    else
      await sql`delete from followers where follower_id = ${fan.id}
        and followed_id <> ${faker.helpers.arrayElement(authors)}`.execute(db());
    await expectNoBucketProblems();
    await expectExactPages(null);
    await expectExactPages(faker.helpers.arrayElement(authors));
    await expectExactPages({ feedOf: reader });
    await expectExactPages({ feedOf: fan });
  }
  // A user who posts, follows, is followed (and follows themself) deleted with all of it (a cascade).
  const leaver = await t.register({ username: 'leaver' });
  await insertPosts([leaver.id], 40);
  for (const other of [reader.id, authors[2], leaver.id]) await toggleFollow(leaver, other);
  if (!(await followedBy(reader.id)).includes(leaver.id)) await toggleFollow(reader, leaver.id);
  await sql`insert into followers (follower_id, followed_id) values (${fan.id}, ${leaver.id}) on conflict do nothing`.execute(
    db(),
  );
  await expectNoBucketProblems();
  await db().deleteFrom('users').where('id', '=', leaver.id).execute();
  expect(
    await db().selectFrom('feed_weeks').select('user_id').where('user_id', '=', leaver.id).execute(),
  ).toEqual([]);
  await expectNoBucketProblems();
  await expectExactPages({ feedOf: reader });
  // An author deleted with their posts (a cascade), then every post at once, then every follow.
  await db().deleteFrom('users').where('id', '=', authors[0]).execute();
  await expectNoBucketProblems();
  await expectExactPages(null);
  await expectExactPages({ feedOf: fan });
  await sql`truncate posts`.execute(db());
  expect(await db().selectFrom('post_buckets').selectAll().execute()).toEqual([]);
  expect(await db().selectFrom('feed_weeks').selectAll().execute()).toEqual([]);
  await insertPosts(authors.slice(1), 50);
  await expectExactPages(null);
  await expectExactPages(authors[1]);
  await expectExactPages({ feedOf: reader });
  await sql`truncate followers`.execute(db());
  await expectNoBucketProblems();
  await expectExactPages({ feedOf: fan });
}, 120_000);

/**
 * A page is in order, and as long as its total allows from its offset (none past the end: the
 * collection may have shrunk since its offset was chosen).
 */
function expectWholeAndInOrder(p: Page) {
  const keys = p.data.map((post) => [post.timestamp, post.id] as const);
  const sorted = [...keys].sort((a, b) => (a[0] === b[0] ? b[1] - a[1] : a[0] < b[0] ? 1 : -1));
  expect(keys).toEqual(sorted);
  expect(p.pagination.count).toBe(Math.max(0, Math.min(25, p.pagination.total - p.pagination.offset)));
}

test('writers racing each other and readers of deep pages lose no count', async () => {
  faker.seed(7);
  const writers = await Promise.all([0, 1, 2].map((i) => t.register({ username: `racer${i}` })));
  const fans = await Promise.all([0, 1].map((i) => t.register({ username: `racing-fan${i}` })));
  await insertPosts(
    writers.map((w) => w.id),
    200,
  );
  await toggleFollow(fans[0], writers[0].id);
  const deep: Page[] = [];
  const write = (w: TestUser, i: number) =>
    t.as(w.token, { method: 'POST', url: '/api/posts', payload: { text: `race ${i}` } }).then((res) => {
      expect(res.statusCode).toBe(201);
    });
  const remove = () =>
    sql`delete from posts where id = (select id from posts order by random() limit 1)`.execute(db());
  // Posts moved in time into one minute: they leave their buckets for the one of that minute, which is
  // cut again and again. No counter changes, so only the buckets' own lock keeps two moves from
  // counting in a bucket the other is cutting. They leave their weeks too, which the feeds of their
  // authors' followers count, while those follow and unfollow.
  const move = () =>
    sql`update posts set timestamp = ${faker.date.between({ from: '2025-06-01T00:00:00Z', to: '2025-06-01T00:01:00Z' })}
        where id = (select id from posts order by random() limit 1)`.execute(db());
  // A fan follows or unfollows a writer (a follow already there, or one not there, is refused: 409).
  const follow = (fan: TestUser, writer: TestUser, method: 'POST' | 'DELETE') =>
    t
      .as(fan.token, { method, url: `/api/me/following/${writer.id}` })
      .then((res) => expect([204, 409]).toContain(res.statusCode));
  const read = async () => {
    const { pagination } = await page('/api/posts?limit=1');
    deep.push(await page(`/api/posts?offset=${Math.max(0, pagination.total - 30)}`));
  };
  // A fan's feed near its end, by offset and after the cursor of its middle.
  const readFeed = async (fan: TestUser) => {
    const { pagination, data } = await page('/api/feed?limit=1', fan);
    deep.push(await page(`/api/feed?offset=${Math.max(0, pagination.total - 30)}`, fan));
    const middle = await page(`/api/feed?offset=${Math.floor(pagination.total / 2)}&limit=1`, fan);
    const cursor = middle.data[0]?.timestamp ?? data[0]?.timestamp;
    if (cursor) deep.push(await page(`/api/feed?after=${encodeURIComponent(cursor)}`, fan));
  };
  await Promise.all(
    Array.from({ length: 320 }, (_, i) => {
      const fan = faker.helpers.arrayElement(fans);
      const writer = faker.helpers.arrayElement(writers);
      const method = faker.helpers.arrayElement(['POST', 'DELETE'] as const);
      return [
        read,
        remove,
        move,
        move,
        () => write(writers[i % 3], i),
        () => follow(fan, writer, method),
        () => readFeed(fan),
        move,
      ][i % 8]();
    }),
  );
  await expectNoBucketProblems();
  // Each deep page is in order and as long as its total allows.
  for (const p of deep) expectWholeAndInOrder(p);
  await expectExactPages(null);
  await expectExactPages(writers[0].id);
  for (const fan of fans) await expectExactPages({ feedOf: fan });
}, 120_000);

test("follows racing moves of the followed authors' posts (neither takes a lock of the other's but `totals`) lose no count", async () => {
  faker.seed(1700);
  const authors = await Promise.all([0, 1].map((i) => t.register({ username: `moved${i}` })));
  const fans = await Promise.all([0, 1, 2].map((i) => t.register({ username: `mover-fan${i}` })));
  await insertPosts(
    authors.map((a) => a.id),
    400,
  );
  // In SQL, as psql or a script would: no event log lock, only the triggers' own.
  const toggle = (fan: TestUser, author: TestUser) =>
    sql`with gone as (delete from followers where (follower_id, followed_id) = (${fan.id}, ${author.id}) returning 1)
        insert into followers (follower_id, followed_id) select ${fan.id}, ${author.id} where not exists (select 1 from gone)
        on conflict do nothing`.execute(db());
  // Some of an author's posts moved a few weeks, out of their weeks into others (locked in id order
  // first, so that two moves wait for each other instead of deadlocking).
  const move = (author: TestUser) =>
    sql`update posts p set timestamp = p.timestamp + ${`${faker.number.int({ min: -30, max: 30 })} days`}::interval
        from (
          select id from posts where id in (select id from posts where user_id = ${author.id} order by random() limit 20)
          order by id for update
        ) picked
        where p.id = picked.id`.execute(db());
  await Promise.all(
    Array.from({ length: 400 }, (_, i) => {
      const author = faker.helpers.arrayElement(authors);
      return i % 2 ? move(author) : toggle(faker.helpers.arrayElement(fans), author);
    }),
  );
  await expectNoBucketProblems();
  for (const fan of fans) await expectExactPages({ feedOf: fan });
}, 120_000);

test('a deleted user leaves no count behind in any feed, whichever cascade PostgreSQL runs first', async () => {
  faker.seed(1701);
  /** The tables users' deletions cascade to, in the order their triggers fire (RI triggers by name). */
  const cascades = async () =>
    (
      await sql<{ child: string }>`
        select c.conrelid::regclass::text as child from pg_trigger t join pg_constraint c on c.oid = t.tgconstraint
        where t.tgrelid = 'users'::regclass and c.confdeltype = 'c' and t.tgname like 'RI_ConstraintTrigger_a_%'
        order by t.tgname`.execute(db())
    ).rows.map((r) => r.child);
  for (const round of [0, 1]) {
    if (round === 1) {
      // The posts' foreign key made again: its cascade now runs after the follows', and so do the
      // statement triggers of each (all after every cascaded row is gone).
      await sql`alter table posts drop constraint posts_user_id_fkey,
        add constraint posts_user_id_fkey foreign key (user_id) references users (id) on delete cascade`.execute(
        db(),
      );
    }
    const order = await cascades();
    expect(order.indexOf('posts') < order.indexOf('followers')).toBe(round === 0);
    const [leaver, ...others] = await Promise.all(
      [0, 1, 2, 3].map((i) => t.register({ username: `deleted${round}-${i}` })),
    );
    await insertPosts([leaver.id, ...others.map((o) => o.id)], 200);
    for (const other of others) {
      await toggleFollow(other, leaver.id);
      await toggleFollow(leaver, other.id);
    }
    await toggleFollow(leaver, leaver.id);
    await expectNoBucketProblems();
    await db().deleteFrom('users').where('id', '=', leaver.id).execute();
    await expectNoBucketProblems();
    for (const other of others) await expectExactPages({ feedOf: other });
  }
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
  // Feeds' weeks: one counting a post too many, one gone, one where the feed has no post.
  await sql`update feed_weeks set n = n + 1 where (user_id, week) = (select user_id, max(week) from feed_weeks group by 1 order by 1 desc limit 1)`.execute(
    db(),
  );
  await sql`delete from feed_weeks where (user_id, week) = (select user_id, min(week) from feed_weeks group by 1 order by 1 limit 1)`.execute(
    db(),
  );
  await sql`insert into feed_weeks (user_id, week, n) values (${fan.id}, '1999-01-04 00:00:00+00', 5)`.execute(
    db(),
  );
  // One bucket counts 3 too many (so does its scope, all posts); one author's posts have no bucket;
  // one range of user ids counts one user too many; one author's week two posts too many (and so
  // do the feeds it was fanned out to, right by that week but wrong by the posts); three feeds' weeks
  // wrong by themselves.
  const broken = await bucketProblems();
  expect([
    broken.wrongBuckets.length,
    broken.wrongScopes.length,
    broken.wrongUserRanges.length,
    broken.wrongWeeks.length,
  ]).toEqual([1, 2, 1, 1]);
  expect(broken.wrongFeedWeeks.length).toBeGreaterThanOrEqual(3);
  const env = childProcessEnv(t.config.database as { url: string; schema: string }, { LOG_LEVEL: 'silent' });
  const repair = () => run(process.execPath, [...CLI, 'repair-positions'], { cwd: APP_DIR, env });
  expect((await repair()).stdout).toMatch(
    /^Positions repaired: 5 wrong buckets found, \d+ now; 3 wrong feed weeks; 1 follow renamed\.\n$/,
  );
  expect(await bucketProblems()).toMatchObject({
    wrongBuckets: [],
    wrongScopes: [],
    wrongUserRanges: [],
    wrongWeeks: [],
    wrongFeedWeeks: [],
  });
  expect(await staleFollowNames()).toEqual([]);
  await expectExactPages(null);
  await expectExactPages({ feedOf: reader });
  expect((await repair()).stdout).toMatch(
    /^Positions repaired: 0 wrong buckets found, \d+ now; 0 wrong feed weeks; 0 follows renamed\.\n$/,
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

test("a deep page of the feed reads its owner's weeks (feed_weeks, not each author's) and sorts one or two weeks' posts", async () => {
  const viewer = await t.register({ username: 'feed-reader' });
  const followed = await Promise.all([0, 1, 2].map((i) => t.register({ username: `weekly${i}` })));
  for (const f of followed) await toggleFollow(viewer, f.id);
  // 3,000 posts, one every 3 hours (56 a week in this feed), over some 54 weeks.
  const WEEKLY = 56;
  await sql`insert into posts (user_id, text, timestamp)
    select (${sql.val(followed.map((f) => f.id))}::int[])[1 + g % 3], 'weekly ' || g,
           timestamptz '2024-01-01 00:00:00+00' + g * interval '3 hours'
    from generate_series(1, 3000) g`.execute(db());
  await sql`vacuum analyze posts`.execute(db());
  await sql`analyze feed_weeks`.execute(db());
  const weeks = Number(
    (
      await sql<{ n: string }>`select count(*) as n from feed_weeks where user_id = ${viewer.id}`.execute(
        db(),
      )
    ).rows[0].n,
  );
  expect(weeks).toBeGreaterThan(50);
  for (const [url, walks] of [
    ['/api/feed?offset=2700', 2], // the week holding the offset and the one holding the page's end
    ['/api/feed', 2], // the first page too: the newest week, and the one before when it holds few
    ['/api/feed?after=2024-02-15T00:00:00Z', 3], // the cursor's position in its week, then the page
  ] as const) {
    const { root, plan } = await planOf(() => page(url, viewer), /feed_weeks/);
    // The position from the owner's weeks alone: no scan reads more rows than the feed has weeks,
    // and no author's weeks are read.
    const weekScans = plan.filter((n) => n['Relation Name'] === 'feed_weeks');
    expect(weekScans.length).toBeGreaterThan(0);
    for (const n of weekScans) expect(n['Actual Rows']).toBeLessThanOrEqual(weeks);
    expect(plan.filter((n) => n['Relation Name'] === 'post_weeks')).toEqual([]);
    // Sorted: at most two weeks of the feed's posts, never the 3,000.
    for (const sort of plan.filter((n) => n['Node Type'] === 'Sort'))
      if (nodes(sort).some((n) => n['Relation Name'] === 'posts'))
        expect(sort['Actual Rows']).toBeLessThanOrEqual(2 * WEEKLY);
    // The authors' index entries read: those weeks' (and, after a cursor, its own week's once more).
    const walked = plan.filter(
      (n) =>
        n['Relation Name'] === 'posts' && /Index/.test(n['Node Type']) && n['Index Name'] !== 'posts_pkey',
    );
    expect(
      walked.reduce((sum, n) => sum + (n['Actual Rows'] ?? 0) * (n['Actual Loops'] ?? 1), 0),
    ).toBeLessThanOrEqual(walks * WEEKLY);
    expect((root['Shared Hit Blocks'] ?? 0) + (root['Shared Read Blocks'] ?? 0)).toBeLessThan(200);
  }
}, 120_000);
