import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildTestApp, type TestApp, type TestUser } from './support/app';
import { expectJsonErrors, FORBIDDEN, NOT_FOUND, UNAUTHORIZED, USER_KEYS } from './support/wire';

/**
 * Posts and the feed as the contract and the Flask backend define them: the Post shape (a full
 * author, a millisecond ISO timestamp), marshmallow's wording of the 1..280 rule, lookups, edits
 * and deletions by the author only, the newest-first collections, the feed (own posts plus those
 * of everyone followed, each once), the Bearer 401 on every endpoint, and concurrent writes.
 */

const MS_ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const LENGTH = 'Length must be between 1 and 280.';

interface PostJson {
  id: number;
  url: string;
  text: string;
  timestamp: string;
  author: Record<string, unknown> & { id: number; username: string };
}
interface PageJson {
  pagination: { limit: number; offset: number; count: number; total: number };
  data: PostJson[];
}

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
}, 60_000);
afterAll(() => t?.close());

const createPost = (token: string, payload: unknown) =>
  t.as(token, { method: 'POST', url: '/api/posts', payload: payload as never });
const getJson = (token: string, url: string) => t.as(token, { method: 'GET', url });
/** Creates a post one second after the previous one (the test clock), so "newest first" is unambiguous. */
async function post(user: TestUser, text: string): Promise<PostJson> {
  t.clock.advance(1000);
  const res = await createPost(user.token, { text });
  expect(res.statusCode).toBe(201);
  return res.json();
}
/** Every item of a post collection, following its offset pages. */
async function all(token: string, url: string): Promise<{ total: number; data: PostJson[] }> {
  const data: PostJson[] = [];
  let total = 0;
  for (let offset = 0; offset === 0 || offset < total; offset += 25) {
    const res = await getJson(token, `${url}?offset=${offset}`);
    expect(res.statusCode).toBe(200);
    const page = res.json() as PageJson;
    total = page.pagination.total;
    data.push(...page.data);
    if (page.data.length === 0) break;
  }
  return { total, data };
}
function expectNewestFirst(posts: PostJson[]) {
  for (let i = 1; i < posts.length; i++) {
    const [newer, older] = [posts[i - 1], posts[i]];
    const order = Date.parse(newer.timestamp) - Date.parse(older.timestamp) || newer.id - older.id;
    expect({ newer: newer.id, older: older.id, inOrder: order > 0 }).toEqual({
      newer: newer.id,
      older: older.id,
      inOrder: true,
    });
  }
}
/** A 200 with `post` (its id, url and timestamp), whose text is `text`. */
function expectPost(res: LightMyRequestResponse, post: PostJson, text: string) {
  expect(res.statusCode).toBe(200);
  expect(res.json()).toMatchObject({ id: post.id, url: post.url, text, timestamp: post.timestamp });
}

describe('POST /api/posts', () => {
  let author: TestUser;
  beforeAll(async () => {
    author = await t.register({ username: 'writer' });
  });

  test('201 with the Post: id, url, text, a millisecond UTC timestamp of now, and the full author without secrets', async () => {
    const before = t.clock.now().getTime();
    const res = await createPost(author.token, { text: 'Hello, world!' });
    const after = t.clock.now().getTime();
    expect(res.statusCode).toBe(201);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers.location).toBeUndefined();
    const body = res.json() as PostJson;
    expect(Object.keys(body).sort()).toEqual(['author', 'id', 'text', 'timestamp', 'url']);
    expect(body.id).toEqual(expect.any(Number));
    expect(body.url).toBe(`/api/posts/${body.id}`);
    expect(body.text).toBe('Hello, world!');
    expect(body.timestamp).toMatch(MS_ISO_UTC);
    expect(Date.parse(body.timestamp)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(body.timestamp)).toBeLessThanOrEqual(after);
    expect(Object.keys(body.author).sort()).toEqual(USER_KEYS);
    expect(JSON.stringify(body)).not.toMatch(/password_hash|"password"/);
    const me = (await getJson(author.token, `/api/users/${author.id}`)).json();
    const { last_seen: _a, ...authorRest } = body.author;
    const { last_seen: _b, ...meRest } = me;
    expect(authorRest).toEqual(meRest);
    expect(body.author).toMatchObject({
      id: author.id,
      username: 'writer',
      url: `/api/users/${author.id}`,
      posts_url: `/api/users/${author.id}/posts`,
      has_password: true,
    });
  });

  test('the created post reads back identically, and its text is stored as sent (no trimming)', async () => {
    const created = (await createPost(author.token, { text: '  spaced out \n' })).json() as PostJson;
    expect(created.text).toBe('  spaced out \n');
    const read = await getJson(author.token, created.url);
    expect(read.statusCode).toBe(200);
    const { author: a1, ...rest1 } = read.json() as PostJson;
    const { author: a2, ...rest2 } = created;
    expect(rest1).toEqual(rest2);
    expect(a1.id).toBe(a2.id);
  });

  test.each([
    ['empty text', { text: '' }, { text: [LENGTH] }],
    ['281 characters', { text: 'x'.repeat(281) }, { text: [LENGTH] }],
    [
      '281 emoji (counted as characters, not UTF-16 units or bytes)',
      { text: '😀'.repeat(281) },
      { text: [LENGTH] },
    ],
    ['no text', {}, { text: ['Missing data for required field.'] }],
    ['null text', { text: null }, { text: ['Field may not be null.'] }],
    ['a number as text', { text: 42 }, { text: ['Not a valid string.'] }],
    ['an unknown field', { text: 'fine', colour: 'red' }, { colour: ['Unknown field.'] }],
    ['a dump-only field', { text: 'fine', id: 7 }, { id: ['Unknown field.'] }],
  ])('%s → 400 with errors.json', async (_name, payload, fields) => {
    const before = await all(author.token, `/api/users/${author.id}/posts`);
    expectJsonErrors(await createPost(author.token, payload), fields);
    expect((await all(author.token, `/api/users/${author.id}/posts`)).total).toBe(before.total);
  });

  test('a JSON body that is not an object is a validation error on _schema', async () => {
    const res = await t.as(author.token, {
      method: 'POST',
      url: '/api/posts',
      payload: '["text"]',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors.json).toEqual({ _schema: [expect.any(String)] });
  });

  test('no body at all is "Missing data for required field."', async () => {
    expectJsonErrors(
      await t.as(author.token, {
        method: 'POST',
        url: '/api/posts',
        headers: { 'content-type': 'application/json' },
      }),
      {
        text: ['Missing data for required field.'],
      },
    );
  });

  test.each([
    ['1 character', 'a'],
    ['280 characters', 'y'.repeat(280)],
    ['280 emoji', '😀'.repeat(280)],
    ['280 accented letters', 'é'.repeat(280)],
  ])('%s is accepted and stored exactly', async (_name, text) => {
    const res = await createPost(author.token, { text });
    expect(res.statusCode).toBe(201);
    expect(res.json().text).toBe(text);
    expect((await getJson(author.token, res.json().url)).json().text).toBe(text);
  });
});

describe('GET /api/posts/<id>', () => {
  let reader: TestUser;
  let existing: PostJson;
  beforeAll(async () => {
    reader = await t.register();
    existing = await post(await t.register(), 'to be read');
  });

  test('200 with the post, for any authenticated user', async () => {
    expectPost(await getJson(reader.token, `/api/posts/${existing.id}`), existing, 'to be read');
  });

  test.each([
    ['a missing id', '987654'],
    ['a non-numeric id', 'abc'],
    ['a negative id', '-1'],
    ['zero', '0'],
    ['an id past int4', '2147483648'],
    ['a huge id', '99999999999999999999999999'],
    ['a decimal', '1.5'],
  ])('%s → 404 in the Flask format', async (_name, id) => {
    const res = await getJson(reader.token, `/api/posts/${id}`);
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual(NOT_FOUND);
  });
});

describe('PUT and DELETE /api/posts/<id>', () => {
  let author: TestUser;
  let other: TestUser;
  beforeAll(async () => {
    author = await t.register();
    other = await t.register();
  });
  const put = (user: TestUser, id: number | string, payload: unknown) =>
    t.as(user.token, { method: 'PUT', url: `/api/posts/${id}`, payload: payload as never });
  const del = (user: TestUser, id: number | string) =>
    t.as(user.token, { method: 'DELETE', url: `/api/posts/${id}` });

  test('the author edits the text: 200 with the new text, the timestamp unchanged', async () => {
    const original = await post(author, 'first draft');
    t.clock.advance(60_000);
    const res = await put(author, original.id, { text: 'final version' });
    expectPost(res, original, 'final version');
    expect(res.json().author.id).toBe(author.id);
    expect((await getJson(other.token, original.url)).json()).toMatchObject({
      text: 'final version',
      timestamp: original.timestamp,
    });
  });

  test('an empty change set `{}` is 200 and changes nothing', async () => {
    const original = await post(author, 'leave me be');
    const res = await put(author, original.id, {});
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id: original.id, text: 'leave me be', timestamp: original.timestamp });
  });

  test.each([
    ['empty text', { text: '' }, { text: [LENGTH] }],
    ['281 characters', { text: 'z'.repeat(281) }, { text: [LENGTH] }],
    ['null text', { text: null }, { text: ['Field may not be null.'] }],
    [
      'an unknown field',
      { text: 'ok', timestamp: '2020-01-01T00:00:00Z' },
      { timestamp: ['Unknown field.'] },
    ],
  ])('the author sending %s gets a 400 and the post is unchanged', async (_name, payload, fields) => {
    const original = await post(author, 'stable');
    expectJsonErrors(await put(author, original.id, payload), fields);
    expect((await getJson(author.token, original.url)).json().text).toBe('stable');
  });

  test("someone else's edit is 403 Forbidden and the post is unchanged", async () => {
    const original = await post(author, 'mine');
    const res = await put(other, original.id, { text: 'hijacked' });
    expect(res.statusCode).toBe(403);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.json()).toEqual(FORBIDDEN);
    expect((await getJson(author.token, original.url)).json()).toMatchObject({
      text: 'mine',
      timestamp: original.timestamp,
    });
  });

  test("someone else's delete is 403 Forbidden and the post survives", async () => {
    const original = await post(author, 'still mine');
    const res = await del(other, original.id);
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual(FORBIDDEN);
    expect((await getJson(author.token, original.url)).statusCode).toBe(200);
  });

  test('the author deletes: 204 with an empty body, then the post is 404 for everyone, and gone from the lists', async () => {
    const doomed = await post(author, 'short-lived');
    const res = await del(author, doomed.id);
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expect((await getJson(author.token, doomed.url)).statusCode).toBe(404);
    expect((await getJson(other.token, doomed.url)).json()).toEqual(NOT_FOUND);
    expect((await del(author, doomed.id)).json()).toEqual(NOT_FOUND);
    expect((await put(author, doomed.id, { text: 'zombie' })).statusCode).toBe(404);
    expect((await all(author.token, `/api/users/${author.id}/posts`)).data.map((p) => p.id)).not.toContain(
      doomed.id,
    );
  });

  test.each(['987654', 'abc', '99999999999999999999'])('PUT and DELETE of post %s → 404', async (id) => {
    expect((await put(author, id, { text: 'x' })).json()).toEqual(NOT_FOUND);
    expect((await del(author, id)).json()).toEqual(NOT_FOUND);
  });
});

describe('collections: GET /api/posts and /api/users/<id>/posts', () => {
  let alice: TestUser;
  let bob: TestUser;
  let written: PostJson[];
  beforeAll(async () => {
    alice = await t.register();
    bob = await t.register();
    written = [];
    for (let i = 0; i < 6; i++) written.push(await post(i % 2 ? bob : alice, `collection post ${i}`));
  });

  test('GET /api/posts lists every post, newest first, with the right total', async () => {
    const res = await getJson(alice.token, '/api/posts');
    expect(res.statusCode).toBe(200);
    const first = res.json() as PageJson;
    expect(first.pagination).toMatchObject({ limit: 25, offset: 0, count: first.data.length });
    expect(first.data[0].id).toBe(written[written.length - 1].id);
    const everything = await all(alice.token, '/api/posts');
    expect(everything.data).toHaveLength(everything.total);
    expect(new Set(everything.data.map((p) => p.id)).size).toBe(everything.total);
    expectNewestFirst(everything.data);
    const ours = everything.data.filter((p) => written.some((w) => w.id === p.id)).map((p) => p.text);
    expect(ours).toEqual(written.map((p) => p.text).reverse());
  });

  test('newest first means by timestamp, not by id', async () => {
    // A post whose timestamp predates everything (as `fake posts` writes them) sorts last.
    const { id } = await t.database.db
      .insertInto('posts')
      .values({ user_id: alice.id, text: 'from long ago', timestamp: new Date('2001-01-01T00:00:00.000Z') })
      .returning('id')
      .executeTakeFirstOrThrow();
    const mine = await all(alice.token, `/api/users/${alice.id}/posts`);
    expect(mine.data[mine.data.length - 1]).toMatchObject({ id, timestamp: '2001-01-01T00:00:00.000Z' });
    const everything = await all(alice.token, '/api/posts');
    expect(everything.data[everything.data.length - 1].id).toBe(id);
    await t.database.db.deleteFrom('posts').where('id', '=', id).execute();
  });

  test("GET /api/users/<id>/posts has only that author's posts, newest first", async () => {
    const res = await all(alice.token, `/api/users/${bob.id}/posts`);
    expect(res.total).toBe(3);
    expect(res.data.map((p) => p.text)).toEqual([
      'collection post 5',
      'collection post 3',
      'collection post 1',
    ]);
    expect(res.data.every((p) => p.author.id === bob.id)).toBe(true);
    const page = (await getJson(bob.token, `/api/users/${bob.id}/posts?limit=2`)).json() as PageJson;
    expect(page.pagination).toEqual({ limit: 2, offset: 0, count: 2, total: 3 });
  });

  test('a user without posts has an empty collection', async () => {
    const quiet = await t.register();
    const res = await getJson(alice.token, `/api/users/${quiet.id}/posts`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ pagination: { limit: 25, offset: 0, count: 0, total: 0 }, data: [] });
  });

  test.each(['987654', 'abc', '99999999999999999999'])('GET /api/users/%s/posts → 404', async (id) => {
    const res = await getJson(alice.token, `/api/users/${id}/posts`);
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual(NOT_FOUND);
  });
});

describe('GET /api/feed', () => {
  let me: TestUser;
  let friend: TestUser;
  let idol: TestUser;
  let stranger: TestUser;
  let follower: TestUser;
  const follow = async (user: TestUser, target: TestUser) => {
    const res = await t.as(user.token, { method: 'POST', url: `/api/me/following/${target.id}` });
    expect(res.statusCode).toBe(204);
  };
  beforeAll(async () => {
    me = await t.register();
    friend = await t.register();
    idol = await t.register();
    stranger = await t.register();
    follower = await t.register();
    await follow(me, friend);
    await follow(me, idol);
    await follow(follower, me); // who follows me does not matter to my feed
    for (const [user, text] of [
      [friend, 'friend 1'],
      [me, 'me 1'],
      [stranger, 'stranger 1'],
      [idol, 'idol 1'],
      [follower, 'follower 1'],
      [me, 'me 2'],
      [friend, 'friend 2'],
    ] as const) {
      await post(user, text);
    }
  });

  test('is my own posts plus those of everyone I follow, newest first, with the right total', async () => {
    const res = await getJson(me.token, '/api/feed');
    expect(res.statusCode).toBe(200);
    const page = res.json() as PageJson;
    expect(page.pagination).toEqual({ limit: 25, offset: 0, count: 5, total: 5 });
    expect(page.data.map((p) => p.text)).toEqual(['friend 2', 'me 2', 'idol 1', 'me 1', 'friend 1']);
    expectNewestFirst(page.data);
    expect(page.data.find((p) => p.text === 'idol 1')?.author).toMatchObject({
      id: idol.id,
      username: idol.username,
    });
  });

  test('pages of the feed split it without gaps or repeats', async () => {
    const first = (await getJson(me.token, '/api/feed?limit=2')).json() as PageJson;
    const second = (await getJson(me.token, '/api/feed?limit=2&offset=2')).json() as PageJson;
    const third = (await getJson(me.token, '/api/feed?limit=2&offset=4')).json() as PageJson;
    expect([...first.data, ...second.data, ...third.data].map((p) => p.text)).toEqual([
      'friend 2',
      'me 2',
      'idol 1',
      'me 1',
      'friend 1',
    ]);
    expect(third.pagination).toEqual({ limit: 2, offset: 4, count: 1, total: 5 });
  });

  test('a follower sees my posts; a user who follows nobody sees only their own', async () => {
    expect(((await getJson(follower.token, '/api/feed')).json() as PageJson).data.map((p) => p.text)).toEqual(
      ['me 2', 'follower 1', 'me 1'],
    );
    expect(((await getJson(stranger.token, '/api/feed')).json() as PageJson).data.map((p) => p.text)).toEqual(
      ['stranger 1'],
    );
  });

  test('following myself does not show my posts twice', async () => {
    await follow(me, me);
    const page = (await getJson(me.token, '/api/feed')).json() as PageJson;
    expect(page.pagination.total).toBe(5);
    expect(page.data.map((p) => p.text)).toEqual(['friend 2', 'me 2', 'idol 1', 'me 1', 'friend 1']);
  });

  test('unfollowing removes their posts from the feed; an edit shows up in it', async () => {
    expect((await t.as(me.token, { method: 'DELETE', url: `/api/me/following/${idol.id}` })).statusCode).toBe(
      204,
    );
    const friendPost = ((await getJson(me.token, '/api/feed')).json() as PageJson).data.find(
      (p) => p.text === 'friend 2',
    )!;
    expect(
      (
        await t.as(friend.token, {
          method: 'PUT',
          url: friendPost.url,
          payload: { text: 'friend 2 (edited)' },
        })
      ).statusCode,
    ).toBe(200);
    const page = (await getJson(me.token, '/api/feed')).json() as PageJson;
    expect(page.data.map((p) => p.text)).toEqual(['friend 2 (edited)', 'me 2', 'me 1', 'friend 1']);
    expect(page.pagination.total).toBe(4);
  });
});

describe('authentication', () => {
  const BEARER = 'Bearer realm="Authentication Required"';
  let owner: TestUser;
  let target: PostJson;
  beforeAll(async () => {
    owner = await t.register();
    target = await post(owner, 'guarded');
  });
  const requests = (): [string, InjectOptions][] => [
    ['POST /api/posts', { method: 'POST', url: '/api/posts', payload: { text: 'anonymous' } }],
    ['GET /api/posts', { method: 'GET', url: '/api/posts' }],
    ['GET /api/posts/<id>', { method: 'GET', url: `/api/posts/${target.id}` }],
    ['PUT /api/posts/<id>', { method: 'PUT', url: `/api/posts/${target.id}`, payload: { text: 'defaced' } }],
    ['DELETE /api/posts/<id>', { method: 'DELETE', url: `/api/posts/${target.id}` }],
    ['GET /api/users/<id>/posts', { method: 'GET', url: `/api/users/${owner.id}/posts` }],
    ['GET /api/feed', { method: 'GET', url: '/api/feed' }],
    // Authentication comes first: a missing post or an invalid body is still a 401.
    ['GET /api/posts/<missing>', { method: 'GET', url: '/api/posts/987654' }],
    ['POST /api/posts with an invalid body', { method: 'POST', url: '/api/posts', payload: { text: '' } }],
  ];

  test.each([
    ['no Authorization header', null],
    ['a token that is not a JWT', 'not-a-token'],
    ['a forged JWT', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl'],
  ])(
    'with %s every posts endpoint is a 401 with the Bearer challenge, and nothing changes',
    async (_name, token) => {
      for (const [name, options] of requests()) {
        const res = await t.as(token, options);
        expect({ name, status: res.statusCode, challenge: res.headers['www-authenticate'] }).toEqual({
          name,
          status: 401,
          challenge: BEARER,
        });
        expect(res.json()).toEqual(UNAUTHORIZED);
      }
      const after = (await getJson(owner.token, target.url)).json();
      expect(after).toMatchObject({ id: target.id, text: 'guarded' });
    },
  );

  test('a revoked token is a 401 too', async () => {
    const user = await t.register();
    expect((await t.as(user.token, { method: 'DELETE', url: '/api/tokens' })).statusCode).toBe(204);
    const res = await createPost(user.token, { text: 'after logout' });
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toBe(BEARER);
  });

  test('an expired access token is a 401 (15 minutes by default)', async () => {
    const user = await t.register();
    expect((await getJson(user.token, '/api/feed')).statusCode).toBe(200);
    t.clock.advance(16 * 60_000);
    const res = await getJson(user.token, '/api/feed');
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toBe(BEARER);
  });
});

describe('concurrency', () => {
  test('50 concurrent POST /api/posts from one user: all 201, 50 distinct ids, 50 rows', async () => {
    const user = await t.register();
    const texts = Array.from({ length: 50 }, (_, i) => `concurrent ${i}`);
    const responses = await Promise.all(texts.map((text) => createPost(user.token, { text })));
    expect(responses.map((r) => r.statusCode)).toEqual(texts.map(() => 201));
    const bodies = responses.map((r) => r.json() as PostJson);
    expect(bodies.map((b) => b.text)).toEqual(texts);
    expect(new Set(bodies.map((b) => b.id)).size).toBe(50);
    const rows = await t.database.db
      .selectFrom('posts')
      .select(['id', 'text'])
      .where('user_id', '=', user.id)
      .execute();
    expect(rows).toHaveLength(50);
    expect(new Set(rows.map((r) => r.id))).toEqual(new Set(bodies.map((b) => b.id)));
    const listed = await all(user.token, `/api/users/${user.id}/posts`);
    expect(listed.total).toBe(50);
    expect(new Set(listed.data.map((p) => p.id)).size).toBe(50);
  });
});
