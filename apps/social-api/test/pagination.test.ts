import type { CompiledQuery } from 'kysely';
import type { LightMyRequestResponse } from 'fastify';
import { buildTestApp, type TestApp, type TestUser } from './support/app';
import { expectPlainBadRequest, expectQueryErrors } from './support/wire';

/**
 * The pagination rules of the contract and the Flask backend's test-pinned examples: 105 posts one
 * minute apart ("Post 1" the newest) and 26 users `aaa`..`zzz` who all follow (and are followed by)
 * one user. Every post collection (`/api/posts`, `/api/users/<id>/posts`, `/api/feed`) and every
 * follower list obeys the same rules; `/api/users` takes `limit`/`offset` only.
 */

interface Page<T> {
  pagination: { limit: number; offset: number; count: number; total: number };
  data: T[];
}
interface PostJson {
  id: number;
  text: string;
  timestamp: string;
  author: { id: number; username: string };
}
interface UserJson {
  id: number;
  username: string;
}

const texts = (page: Page<PostJson>) => page.data.map((p) => p.text);
const names = (page: Page<UserJson>) => page.data.map((u) => u.username);
/** "Post a".."Post b", inclusive. */
const posts = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => `Post ${a + i}`);
const withQuery = (url: string, query: string) =>
  query ? `${url}${url.includes('?') ? '&' : '?'}${query}` : url;

/** Follows `after` cursors from the first page to the end, as the React client's "More" button does. */
async function walk<T>(
  fetch: (query: string) => Promise<LightMyRequestResponse>,
  cursorOf: (item: T) => string,
) {
  const pages: Page<T>[] = [];
  let res = await fetch('');
  for (;;) {
    expect(res.statusCode).toBe(200);
    const page = res.json<Page<T>>();
    pages.push(page);
    const { offset, count, total } = page.pagination;
    if (offset + count >= total || pages.length > 20) break;
    res = await fetch(`after=${encodeURIComponent(cursorOf(page.data[count - 1]))}`);
  }
  return pages;
}

/** Captures the SQL of every statement the app runs while `fn` runs. */
async function capturingSql(t: TestApp, fn: () => Promise<unknown>): Promise<CompiledQuery[]> {
  const from = t.statements.length;
  await fn();
  return t.statements.slice(from) as CompiledQuery[];
}

describe('the 105 posts and the 26 followers', () => {
  let t: TestApp;
  let author: TestUser;
  let loner: TestUser;
  const letters = [...'abcdefghijklmnopqrstuvwxyz'];
  const followerNames = letters.map((c) => c.repeat(3));
  /** "Post 1" is the newest; the milliseconds make cursors that must round-trip exactly. */
  const base = Date.parse('2024-07-07T12:46:39.123Z');
  const timestampOf = (n: number) => new Date(base - (n - 1) * 60_000);

  const get = (url: string, token = author.token) => t.as(token, { method: 'GET', url });
  const page = async <T>(url: string, token = author.token) => {
    const res = await get(url, token);
    expect(res.statusCode).toBe(200);
    return res.json<Page<T>>();
  };

  beforeAll(async () => {
    t = await buildTestApp();
    author = await t.register({ username: 'author' });
    loner = await t.register({ username: 'loner' });
    const db = t.database.db;
    // Inserted newest first, so ids ascend while timestamps descend: the order must come from the timestamps.
    await db
      .insertInto('posts')
      .values(
        Array.from({ length: 105 }, (_, i) => ({
          user_id: author.id,
          text: `Post ${i + 1}`,
          timestamp: timestampOf(i + 1),
        })),
      )
      .execute();
    // Created in reverse alphabetical order, so id order and username order differ.
    const now = t.clock.now();
    const rows = await db
      .insertInto('users')
      .values(
        [...followerNames].reverse().map((username) => ({
          username,
          email: `${username}@example.com`,
          password_hash: null,
          first_seen: now,
          last_seen: now,
        })),
      )
      .returning('id')
      .execute();
    await db
      .insertInto('followers')
      .values(
        rows.flatMap(({ id }) => [
          { follower_id: id, followed_id: author.id },
          { follower_id: author.id, followed_id: id },
        ]),
      )
      .execute();
  });

  afterAll(async () => {
    await t?.close();
  });

  /**
   * The queries a collection refuses, one test each: a plain 400 for each of `plain`, and a
   * validation error in errors.query (exactly `fields`) for each of `invalid`.
   */
  function testRefusedQueries(
    url: () => string,
    plain: string[],
    invalid: [query: string, fields: Record<string, string[]>][],
  ) {
    test.each(plain)('?%s → plain 400', async (query) => {
      expectPlainBadRequest(await get(withQuery(url(), query)));
    });
    test.each(invalid)('?%s → validation error in errors.query', async (query, fields) => {
      expectQueryErrors(await get(withQuery(url(), query)), fields);
    });
  }

  /** The author's posts, three ways: the author follows only people without posts. */
  const postCollections = () => [
    ['/api/posts', '/api/posts'],
    ['/api/users/<id>/posts', `/api/users/${author.id}/posts`],
    ['/api/feed', '/api/feed'],
  ];
  const postUrls = ['/api/posts', '/api/users/<id>/posts', '/api/feed'];
  const postUrl = (name: string) => postCollections().find(([n]) => n === name)![1];

  describe.each(postUrls)('%s', (name) => {
    test.each<[string, number, number, string[]]>([
      ['', 0, 25, posts(1, 25)],
      ['offset=30&limit=10', 30, 10, posts(31, 40)],
      ['offset=99', 99, 25, posts(100, 105)],
      ['offset=16&limit=5', 16, 5, posts(17, 21)],
      ['offset=37&limit=50', 37, 25, posts(38, 62)],
      ['offset=104', 104, 25, posts(105, 105)],
      ['limit=25&offset=0', 0, 25, posts(1, 25)],
      ['foo=bar&page=3&sort=asc', 0, 25, posts(1, 25)],
    ])('?%s → the pinned page', async (query, offset, limit, expected) => {
      const body = await page<PostJson>(withQuery(postUrl(name), query));
      expect(body.pagination).toEqual({ limit, offset, count: expected.length, total: 105 });
      expect(texts(body)).toEqual(expected);
      for (const post of body.data) expect(post.author.username).toBe('author');
    });

    testRefusedQueries(
      () => postUrl(name),
      ['offset=-2', 'offset=110', 'offset=105', 'limit=0', 'limit=-10', 'offset=-1&limit=5'],
      [
        ['offset=1&after=2024-07-07T12:00:00Z', { _schema: ['Cannot specify both offset and after'] }],
        ['offset=0&after=2024-07-07T12:00:00Z', { _schema: ['Cannot specify both offset and after'] }],
        ['limit=abc', { limit: ['Not a valid integer.'] }],
        ['offset=1.5', { offset: ['Not a valid integer.'] }],
        ['offset=abc', { offset: ['Not a valid integer.'] }],
        ['after=garbage', { after: ['Not a valid datetime.'] }],
        ['after=2024-13-45T99:00:00Z', { after: ['Not a valid datetime.'] }],
      ],
    );

    test('after=<timestamp of data[5]> → offset 6, count 25, Post 7..31', async () => {
      const first = await page<PostJson>(postUrl(name));
      const cursor = first.data[5].timestamp;
      expect(cursor).toBe(timestampOf(6).toISOString());
      const body = await page<PostJson>(withQuery(postUrl(name), `after=${encodeURIComponent(cursor)}`));
      expect(body.pagination).toEqual({ limit: 25, offset: 6, count: 25, total: 105 });
      expect(texts(body)).toEqual(posts(7, 31));
    });

    test('after mode: limit is clamped, the offset counts the items at or before the cursor', async () => {
      const cursor = encodeURIComponent(timestampOf(80).toISOString());
      const clamped = await page<PostJson>(withQuery(postUrl(name), `after=${cursor}&limit=50`));
      expect(clamped.pagination).toEqual({ limit: 25, offset: 80, count: 25, total: 105 });
      expect(texts(clamped)).toEqual(posts(81, 105));
      const small = await page<PostJson>(withQuery(postUrl(name), `after=${cursor}&limit=3`));
      expect(small.pagination).toEqual({ limit: 3, offset: 80, count: 3, total: 105 });
      expect(texts(small)).toEqual(posts(81, 83));
      // Between Post 10 and Post 11: ten posts are at or before it.
      const between = new Date(timestampOf(10).getTime() - 30_000).toISOString();
      const mid = await page<PostJson>(withQuery(postUrl(name), `after=${encodeURIComponent(between)}`));
      expect(mid.pagination).toMatchObject({ offset: 10, count: 25 });
      expect(texts(mid)[0]).toBe('Post 11');
      // Newer than everything: the first page; older than everything: an empty page, not a 400.
      const future = await page<PostJson>(withQuery(postUrl(name), 'after=2099-01-01T00:00:00Z'));
      expect(future.pagination).toEqual({ limit: 25, offset: 0, count: 25, total: 105 });
      expect(texts(future)).toEqual(posts(1, 25));
      const past = await page<PostJson>(
        withQuery(postUrl(name), `after=${encodeURIComponent(timestampOf(105).toISOString())}`),
      );
      expect(past.pagination).toEqual({ limit: 25, offset: 105, count: 0, total: 105 });
      expect(past.data).toEqual([]);
    });

    test('walking with the emitted timestamps as cursors sees every post exactly once, in order', async () => {
      const pages = await walk<PostJson>(
        (q) => get(withQuery(postUrl(name), q)),
        (p) => p.timestamp,
      );
      expect(pages).toHaveLength(5);
      expect(pages.map((p) => p.pagination.offset)).toEqual([0, 25, 50, 75, 100]);
      expect(pages.map((p) => p.pagination.count)).toEqual([25, 25, 25, 25, 5]);
      expect(pages.flatMap(texts)).toEqual(posts(1, 105));
      const timestamps = pages.flatMap((p) => p.data.map((post) => post.timestamp));
      for (const ts of timestamps) expect(ts).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      expect(timestamps).toEqual(posts(1, 105).map((_, i) => timestampOf(i + 1).toISOString()));
    });
  });

  test('after-mode pages read from the cursor on (a WHERE and a LIMIT, no OFFSET); offset mode walks from the bucket holding the offset', async () => {
    const cursor = encodeURIComponent(timestampOf(60).toISOString());
    const afterSql = await capturingSql(t, () => get(`/api/posts?after=${cursor}`));
    const afterPage = afterSql.find((q) => /order by/i.test(q.sql) && /from "posts"/i.test(q.sql));
    expect(afterPage).toBeDefined();
    expect(afterPage!.sql).toMatch(/"timestamp" < \$\d+/);
    expect(afterPage!.sql).toMatch(/\blimit \$\d+/i);
    expect(afterPage!.sql).not.toMatch(/\boffset (?!0\))/i); // `offset 0)`: the page's rows dressed one by one, none skipped
    expect(afterPage!.parameters).toContain(25);

    const offsetSql = await capturingSql(t, () => get('/api/posts?offset=50&limit=10'));
    const offsetPage = offsetSql.find((q) => /order by/i.test(q.sql) && /from post_buckets/i.test(q.sql));
    // The walk takes MAX_LIMIT keys (a constant: see `firstOfKeys`), the page the first `limit`.
    expect(offsetPage!.sql).toMatch(/\boffset t\.skip limit 25\b/i);
    expect(offsetPage!.sql).toMatch(/order by k\.timestamp desc, k\.id desc limit \$\d+/i);
    expect(offsetPage!.parameters).toEqual(expect.arrayContaining([10, 50]));

    const listSql = await capturingSql(t, () => get(`/api/users/${author.id}/followers?after=ggg`));
    const listPage = listSql.find((q) => /order by/i.test(q.sql) && /from "followers"/i.test(q.sql));
    // The follow rows' own copy of the name (migration 2026-11-28T1600_follow_names).
    expect(listPage!.sql).toMatch(/"follower_name" > \$\d+/);
    expect(listPage!.sql).toMatch(/\blimit \$\d+/i);
    expect(listPage!.sql).not.toMatch(/\boffset (?!0\))/i);
  });

  test('offset and after together → errors.query._schema on /api/users/<id>/following', async () => {
    expectQueryErrors(await get(`/api/users/${author.id}/following?offset=1&after=ggg`), {
      _schema: ['Cannot specify both offset and after'],
    });
  });

  describe('follower lists', () => {
    const lists = () => [
      ['/api/me/followers', '/api/me/followers'],
      ['/api/me/following', '/api/me/following'],
      ['/api/users/<id>/followers', `/api/users/${author.id}/followers`],
      ['/api/users/<id>/following', `/api/users/${author.id}/following`],
    ];
    const listUrl = (name: string) => lists().find(([n]) => n === name)![1];

    describe.each([
      '/api/me/followers',
      '/api/me/following',
      '/api/users/<id>/followers',
      '/api/users/<id>/following',
    ])('%s', (name) => {
      test.each<[string, number, number, string[]]>([
        ['', 0, 25, followerNames.slice(0, 25)],
        ['offset=25', 25, 25, ['zzz']],
        ['offset=3&limit=4', 3, 4, ['ddd', 'eee', 'fff', 'ggg']],
        ['offset=20&limit=100', 20, 25, followerNames.slice(20)],
        ['unknown=1', 0, 25, followerNames.slice(0, 25)],
      ])('?%s → by username', async (query, offset, limit, expected) => {
        const body = await page<UserJson>(withQuery(listUrl(name), query));
        expect(body.pagination).toEqual({ limit, offset, count: expected.length, total: 26 });
        expect(names(body)).toEqual(expected);
      });

      test("after='ggg' → offset 7, count 19, 'hhh'..'zzz'", async () => {
        const body = await page<UserJson>(withQuery(listUrl(name), 'after=ggg'));
        expect(body.pagination).toEqual({ limit: 25, offset: 7, count: 19, total: 26 });
        expect(names(body)[0]).toBe('hhh');
        expect(names(body)[18]).toBe('zzz');
        expect(names(body)).toEqual(followerNames.slice(7));
      });

      test('after a name that is not in the list counts the names at or before it', async () => {
        const body = await page<UserJson>(withQuery(listUrl(name), 'after=ggh&limit=2'));
        expect(body.pagination).toEqual({ limit: 2, offset: 7, count: 2, total: 26 });
        expect(names(body)).toEqual(['hhh', 'iii']);
        const end = await page<UserJson>(withQuery(listUrl(name), 'after=zzzz'));
        expect(end.pagination).toEqual({ limit: 25, offset: 26, count: 0, total: 26 });
      });

      test('walking with after=<last username> sees everyone exactly once, in order', async () => {
        const pages = await walk<UserJson>(
          (q) => get(withQuery(listUrl(name), q)),
          (u) => u.username,
        );
        expect(pages.map((p) => p.pagination.offset)).toEqual([0, 25]);
        expect(pages.flatMap(names)).toEqual(followerNames);
      });

      testRefusedQueries(
        () => listUrl(name),
        ['offset=-1', 'offset=26', 'offset=110', 'limit=0', 'limit=-10'],
        [
          ['offset=0&after=ggg', { _schema: ['Cannot specify both offset and after'] }],
          ['limit=abc', { limit: ['Not a valid integer.'] }],
          ['offset=1.5', { offset: ['Not a valid integer.'] }],
        ],
      );
    });
  });

  describe('/api/users (by id, limit/offset only)', () => {
    test('pages in id order with the total', async () => {
      const all = await page<UserJson>('/api/users');
      expect(all.pagination).toEqual({ limit: 25, offset: 0, count: 25, total: 28 });
      const ids = all.data.map((u) => u.id);
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
      expect(names(all).slice(0, 3)).toEqual(['author', 'loner', 'zzz']);
      const slice = await page<UserJson>('/api/users?offset=2&limit=5');
      expect(slice.pagination).toEqual({ limit: 5, offset: 2, count: 5, total: 28 });
      expect(slice.data.map((u) => u.id)).toEqual(ids.slice(2, 7));
      const last = await page<UserJson>('/api/users?offset=25&limit=50&unknown=x');
      expect(last.pagination).toEqual({ limit: 25, offset: 25, count: 3, total: 28 });
      expect(names(last)).toEqual(['ccc', 'bbb', 'aaa']);
    });

    test.each(['after=aaa', 'after=2024-07-07T12:00:00Z', 'offset=-2', 'offset=28', 'limit=0', 'limit=-10'])(
      '?%s → plain 400',
      async (query) => {
        expectPlainBadRequest(await get(`/api/users?${query}`));
      },
    );

    test.each<[string, Record<string, string[]>]>([
      ['limit=abc', { limit: ['Not a valid integer.'] }],
      ['offset=1.5', { offset: ['Not a valid integer.'] }],
      ['offset=1&after=aaa', { _schema: ['Cannot specify both offset and after'] }],
    ])('?%s → validation error in errors.query', async (query, fields) => {
      expectQueryErrors(await get(`/api/users?${query}`), fields);
    });
  });

  describe('empty collections', () => {
    test.each<[string, (ids: { loner: number; aaa: number }) => string]>([
      ['/api/users/<loner>/posts', (ids) => `/api/users/${ids.loner}/posts`],
      ['/api/users/<aaa>/posts', (ids) => `/api/users/${ids.aaa}/posts`],
      ['/api/feed (loner)', () => '/api/feed'],
      ['/api/me/following (loner)', () => '/api/me/following'],
      ['/api/me/followers (loner)', () => '/api/me/followers'],
      ['/api/users/<loner>/following', (ids) => `/api/users/${ids.loner}/following`],
      ['/api/users/<loner>/followers', (ids) => `/api/users/${ids.loner}/followers`],
    ])('%s?offset=5 → 200 with total 0 (no 400)', async (_name, url) => {
      const aaa = await t.database.db
        .selectFrom('users')
        .select('id')
        .where('username', '=', 'aaa')
        .executeTakeFirstOrThrow();
      const u = url({ loner: loner.id, aaa: aaa.id });
      const body = await page<unknown>(`${u}?offset=5`, loner.token);
      expect(body).toEqual({ pagination: { limit: 25, offset: 5, count: 0, total: 0 }, data: [] });
      const plain = await page<unknown>(u, loner.token);
      expect(plain).toEqual({ pagination: { limit: 25, offset: 0, count: 0, total: 0 }, data: [] });
      // The empty-collection allowance is for offsets only.
      expectPlainBadRequest(await get(`${u}?offset=-1`, loner.token));
      expectPlainBadRequest(await get(`${u}?limit=0`, loner.token));
    });

    test.each([
      '/api/feed',
      '/api/me/following',
      '/api/me/followers',
      '/api/users',
      '/api/posts',
      '/api/users/<loner>/posts',
    ])(
      '%s with values no integer can hold → errors.query in marshmallow wording, never a 500',
      async (route) => {
        const u = route.replace('<loner>', String(loner.id));
        for (const field of ['offset', 'limit']) {
          for (const value of ['Infinity', '-Infinity', '1e309', '-1e309']) {
            const res = await get(`${u}?${field}=${value}`, loner.token);
            expectQueryErrors(res, { [field]: ['Not a valid integer.'] });
          }
        }
        // `after` is text: a timestamp it cannot read is a 400; on follower lists it is a username.
        for (const value of ['Infinity', '-Infinity', '1e309']) {
          const res = await get(`${u}?after=${value}`, loner.token);
          if (u.endsWith('/following') || u.endsWith('/followers')) {
            expect(res.statusCode).toBe(200);
            expect(res.json()).toEqual({
              pagination: { limit: 25, offset: 0, count: 0, total: 0 },
              data: [],
            });
          } else {
            expect(res.statusCode).toBe(400);
            expect(res.json()).toMatchObject({ code: 400 });
          }
        }
      },
    );
  });

  test('collections of an unknown user → 404', async () => {
    for (const url of ['/api/users/999999/posts', '/api/users/999999/followers', '/api/users/abc/posts']) {
      const res = await get(url);
      expect(res.statusCode).toBe(404);
    }
  });
});

describe('the feed: own posts plus those of everyone followed, de-duplicated, newest first', () => {
  let t: TestApp;
  let reader: TestUser;
  /** Expected feed texts, newest first. */
  let expected: string[];
  const get = (url: string) => t.as(reader.token, { method: 'GET', url });

  beforeAll(async () => {
    t = await buildTestApp();
    reader = await t.register({ username: 'reader' });
    const alice = await t.register({ username: 'alice' });
    const bob = await t.register({ username: 'bob' });
    const eve = await t.register({ username: 'eve' });
    // Interleaved authors, one post every 7 seconds (plus odd milliseconds), newest first.
    const authors = [reader, alice, bob, eve];
    const base = Date.parse('2025-03-01T08:00:00.457Z');
    const rows = Array.from({ length: 80 }, (_, i) => {
      const author = authors[i % 4];
      return { user_id: author.id, text: `${author.username} ${i}`, timestamp: new Date(base - i * 7_003) };
    });
    // Inserted in a scrambled order: ids say nothing about time.
    const scrambled = rows
      .map((r, i) => ({ r, k: (i * 37) % 80 }))
      .sort((a, b) => a.k - b.k)
      .map(({ r }) => r);
    await t.database.db.insertInto('posts').values(scrambled).execute();
    // Following yourself as well must not duplicate your own posts.
    for (const id of [alice.id, bob.id, reader.id]) {
      expect((await t.as(reader.token, { method: 'POST', url: `/api/me/following/${id}` })).statusCode).toBe(
        204,
      );
    }
    const visible = new Set([reader.id, alice.id, bob.id]);
    expected = rows.filter((r) => visible.has(r.user_id)).map((r) => r.text);
    expect(expected.length).toBeGreaterThan(50);
  });

  afterAll(async () => {
    await t?.close();
  });

  test('the first page and its total', async () => {
    const res = await get('/api/feed');
    expect(res.statusCode).toBe(200);
    const body = res.json<Page<PostJson>>();
    expect(body.pagination).toEqual({ limit: 25, offset: 0, count: 25, total: expected.length });
    expect(texts(body)).toEqual(expected.slice(0, 25));
    expect(texts(body).some((text) => text.startsWith('eve'))).toBe(false);
  });

  test('offset pages and the end of the feed', async () => {
    const res = await get('/api/feed?offset=30&limit=10');
    expect(texts(res.json())).toEqual(expected.slice(30, 40));
    const last = await get(`/api/feed?offset=${expected.length - 1}`);
    expect(last.json().pagination).toEqual({
      limit: 25,
      offset: expected.length - 1,
      count: 1,
      total: expected.length,
    });
    expectPlainBadRequest(await get(`/api/feed?offset=${expected.length}`));
  });

  test('walking by after cursors sees every feed post exactly once, in order', async () => {
    const pages = await walk<PostJson>(
      (q) => get(withQuery('/api/feed', q)),
      (p) => p.timestamp,
    );
    const seen = pages.flatMap(texts);
    expect(seen).toEqual(expected);
    expect(new Set(seen).size).toBe(seen.length);
    expect(pages.map((p) => p.pagination.offset)).toEqual(pages.map((_, i) => i * 25));
  });

  test('after=<data[5].timestamp> → offset 6 on the feed too', async () => {
    const first = (await get('/api/feed')).json<Page<PostJson>>();
    const res = await get(`/api/feed?after=${encodeURIComponent(first.data[5].timestamp)}`);
    expect(res.json().pagination).toEqual({ limit: 25, offset: 6, count: 25, total: expected.length });
    expect(texts(res.json())).toEqual(expected.slice(6, 31));
  });

  test('the feed rules: offset+after, bad limit, bad after', async () => {
    expectQueryErrors(await get('/api/feed?offset=0&after=2025-01-01T00:00:00Z'), {
      _schema: ['Cannot specify both offset and after'],
    });
    expectQueryErrors(await get('/api/feed?limit=abc'), { limit: ['Not a valid integer.'] });
    expectQueryErrors(await get('/api/feed?after=yesterday'), { after: ['Not a valid datetime.'] });
    expectPlainBadRequest(await get('/api/feed?limit=0'));
    expectPlainBadRequest(await get('/api/feed?offset=-2'));
  });
});
