/**
 * Contract tests of the posts API (list, create, reply, react) against the real app and database
 * (see /work/shared/contracts/microblog-api.md). One app per file; every test creates the posts it
 * looks at and finds them by id, so tests do not depend on each other's order.
 */
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { QUEST_TOPICS, type Post, type QuestTopic, type Reply } from '../src/posts/schemas';
import { buildTestApp, storedTotals, type TestApp } from './support/app';

const KINDS = ['like', 'love', 'celebrate', 'insightful', 'support'] as const;
const ZERO_REACTIONS = { like: 0, love: 0, celebrate: 0, insightful: 0, support: 0 };
const ISO_MS_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const POST_FIELDS = [
  'content',
  'id',
  'quest_topic',
  'reactions',
  'replies',
  'reply_count',
  'student_name',
  'timestamp',
];
const REPLY_FIELDS = ['content', 'id', 'post_id', 'student_name', 'timestamp'];
/** The ways a write may name its post: post_id or an alias, as a number or a string of digits. */
const POST_ID_SPELLINGS: [name: string, idField: (id: number) => Record<string, unknown>][] = [
  ['post_id as a number', (id) => ({ post_id: id })],
  ['post_id as a digit string', (id) => ({ post_id: String(id) })],
  ['postId', (id) => ({ postId: id })],
  ['postId as a digit string', (id) => ({ postId: String(id) })],
  ['microblogId', (id) => ({ microblogId: id })],
  ['microblogId as a digit string', (id) => ({ microblogId: String(id) })],
];
/** An astral-plane character: one character, two UTF-16 code units, four UTF-8 bytes. */
const EMOJI = '😀';

let testApp: TestApp;
let app: FastifyInstance;

beforeAll(async () => {
  testApp = await buildTestApp();
  app = testApp.app;
});

afterAll(async () => {
  await testApp?.close();
});

// ---------------------------------------------------------------------------------------------
// helpers

let sequence = 0;
const unique = (prefix: string) => `${prefix} #${++sequence}`;

/** A 2xx response: JSON content type and a body that parses. */
function expectJson(res: LightMyRequestResponse, status: number): unknown {
  expect(res.statusCode).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json\b/);
  return JSON.parse(res.body);
}

/** A validation failure: 400 problem details naming `field` in `errors`. */
function expectBadRequest(res: LightMyRequestResponse, field?: string) {
  expect(res.statusCode).toBe(400);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json\b/);
  const body = res.json();
  expect(body).toMatchObject({ type: 'about:blank', title: 'Bad Request', status: 400 });
  expect(typeof body.detail).toBe('string');
  if (field !== undefined) expect(body.errors.map((e: { field: string }) => e.field)).toContain(field);
}

function expectNotFound(res: LightMyRequestResponse) {
  expect(res.statusCode).toBe(404);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json\b/);
  expect(res.json()).toMatchObject({ type: 'about:blank', title: 'Not Found', status: 404 });
  expect(res.json()).not.toHaveProperty('errors');
}

function expectPostShape(post: Post) {
  expect(Object.keys(post).sort()).toEqual(POST_FIELDS);
  expect(Number.isInteger(post.id)).toBe(true);
  expect(post.id).toBeGreaterThan(0);
  expect(post.timestamp).toMatch(ISO_MS_UTC);
  expect(Object.keys(post.reactions).sort()).toEqual([...KINDS].sort());
  for (const kind of KINDS) expect(Number.isInteger(post.reactions[kind])).toBe(true);
  expect(Number.isInteger(post.reply_count)).toBe(true);
  for (const reply of post.replies) expectReplyShape(reply);
}

function expectReplyShape(reply: Reply) {
  expect(Object.keys(reply).sort()).toEqual(REPLY_FIELDS);
  expect(Number.isInteger(reply.id)).toBe(true);
  expect(reply.id).toBeGreaterThan(0);
  expect(Number.isInteger(reply.post_id)).toBe(true);
  expect(reply.timestamp).toMatch(ISO_MS_UTC);
  expect(reply.student_name === null || typeof reply.student_name === 'string').toBe(true);
}

const postBody = (overrides: Record<string, unknown> = {}) => ({
  content: unique('A post'),
  quest_topic: 'online_safety',
  student_name: 'Ada',
  ...overrides,
});

const writePost = (payload: unknown) =>
  app.inject({ method: 'POST', url: '/api/microblog', payload: payload as InjectOptions['payload'] });
const writeReply = (payload: unknown) =>
  app.inject({ method: 'POST', url: '/api/microblog/reply', payload: payload as InjectOptions['payload'] });
const writeReaction = (payload: unknown) =>
  app.inject({
    method: 'POST',
    url: '/api/microblog/reaction',
    payload: payload as InjectOptions['payload'],
  });

/** Tests that a post with `field` set to each value of `values`, or without it, is a 400 naming the field. */
function testPostFieldRejected(
  field: 'content' | 'quest_topic' | 'student_name',
  values: [label: string, value: unknown][],
) {
  test.each(values)('rejects %s with 400', async (_label, value) => {
    expectBadRequest(await writePost(postBody({ [field]: value })), field);
  });

  test(`rejects a missing ${field} with 400`, async () => {
    const { [field]: _omitted, ...body } = postBody();
    expectBadRequest(await writePost(body), field);
  });
}

/**
 * A write naming no post (`value`: a post_id, or an object with an alias) with the rest of its body:
 * a 404 that stores nothing.
 */
async function expectNoSuchPost(
  write: (payload: unknown) => Promise<LightMyRequestResponse>,
  value: unknown,
  rest: Record<string, unknown>,
) {
  const before = await stored();
  const idField = typeof value === 'object' ? value : { post_id: value };
  expectNotFound(await write({ ...idField, ...rest }));
  expect(await stored()).toEqual(before);
}

/** A reaction that must succeed: the updated post it answers. */
async function react(payload: Record<string, unknown>): Promise<Post> {
  return expectJson(await writeReaction(payload), 200) as Post;
}

async function createPost(overrides: Record<string, unknown> = {}): Promise<Post> {
  const res = await writePost(postBody(overrides));
  const post = expectJson(res, 201) as Post;
  expectPostShape(post);
  return post;
}

async function createReply(postId: number, overrides: Record<string, unknown> = {}): Promise<Reply> {
  const res = await writeReply({
    post_id: postId,
    content: unique('A reply'),
    student_name: 'Bob',
    ...overrides,
  });
  const reply = expectJson(res, 201) as Reply;
  expectReplyShape(reply);
  return reply;
}

async function list(query = ''): Promise<{ posts: Post[]; link: string | undefined }> {
  const res = await app.inject({ method: 'GET', url: `/api/microblog${query}` });
  const posts = expectJson(res, 200) as Post[];
  expect(Array.isArray(posts)).toBe(true);
  const link = res.headers.link;
  return { posts, link: typeof link === 'string' ? link : undefined };
}

/** The post as the list shows it (found by id, whatever else the database holds). */
async function listed(id: number): Promise<Post> {
  const { posts } = await list(`?before=${id + 1}&limit=1`);
  expect(posts).toHaveLength(1);
  expect(posts[0].id).toBe(id);
  return posts[0];
}

const stored = () => storedTotals(testApp.database);

async function allPostIds(topic?: string): Promise<number[]> {
  let query = testApp.database.db.selectFrom('posts').select('id').orderBy('id', 'desc');
  if (topic) query = query.where('quest_topic', '=', topic as QuestTopic);
  return (await query.execute()).map((r) => r.id);
}

/** Parses `Link: <URL>; rel="next"`; fails when the header has another shape. */
function nextLink(link: string | undefined): URL {
  expect(link).toMatch(/^<\/api\/microblog\?[^>]+>; rel="next"$/);
  return new URL(link!.slice(1, link!.indexOf('>')), 'http://localhost');
}

/** Follows `Link` from `first` to the end; the ids of every page, in order. */
async function walk(first: string): Promise<{ ids: number[]; pages: number }> {
  const ids: number[] = [];
  let url: string | undefined = first;
  let pages = 0;
  while (url) {
    expect(++pages).toBeLessThan(1000);
    const res = await app.inject({ method: 'GET', url });
    const posts = expectJson(res, 200) as Post[];
    ids.push(...posts.map((p) => p.id));
    const link = res.headers.link as string | undefined;
    if (link === undefined) break;
    const next = nextLink(link);
    url = `${next.pathname}${next.search}`;
  }
  return { ids, pages };
}

// ---------------------------------------------------------------------------------------------

describe('POST /api/microblog (write a post)', () => {
  test('answers 201 with the created post: server id (a JSON number), timestamp, no replies, zero-filled reactions', async () => {
    const before = Date.now();
    const res = await writePost({
      content: 'Think before you share',
      quest_topic: 'digital_footprint',
      student_name: 'Ada',
    });
    const post = expectJson(res, 201) as Post;
    expectPostShape(post);
    expect(post).toMatchObject({
      content: 'Think before you share',
      quest_topic: 'digital_footprint',
      student_name: 'Ada',
    });
    expect(res.body).toMatch(new RegExp(`"id":${post.id}[,}]`)); // unquoted: the panel writes it into onclick
    expect(post.replies).toEqual([]);
    expect(post.reply_count).toBe(0);
    expect(post.reactions).toEqual(ZERO_REACTIONS);
    const created = Date.parse(post.timestamp);
    expect(created).toBeGreaterThanOrEqual(before - 5_000);
    expect(created).toBeLessThanOrEqual(Date.now() + 5_000);
  });

  test('the created post is listed with the same fields', async () => {
    const post = await createPost({ quest_topic: 'digital_literacy' });
    expect(await listed(post.id)).toEqual(post);
  });

  test('each post gets a new, larger id', async () => {
    const a = await createPost();
    const b = await createPost();
    expect(b.id).toBeGreaterThan(a.id);
  });

  test('trims content and student_name before storing them', async () => {
    const post = await createPost({ content: ' \n\t Be kind online \t\n ', student_name: '   Grace  ' });
    expect(post.content).toBe('Be kind online');
    expect(post.student_name).toBe('Grace');
    expect((await listed(post.id)).content).toBe('Be kind online');
  });

  test('stores and returns text raw, without escaping HTML', async () => {
    const content = `<b>bold</b> & <script>alert("x")</script> 'quotes' ${EMOJI}`;
    const post = await createPost({ content, student_name: '<i>Eve</i>' });
    expect(post.content).toBe(content);
    expect(post.student_name).toBe('<i>Eve</i>');
    const again = await listed(post.id);
    expect(again.content).toBe(content);
    expect(again.student_name).toBe('<i>Eve</i>');
  });

  describe('content: required, 1..280 characters after trimming', () => {
    test('accepts 1 character', async () => {
      expect((await createPost({ content: 'x' })).content).toBe('x');
    });

    test('accepts exactly 280 characters', async () => {
      const content = 'a'.repeat(280);
      expect((await createPost({ content })).content).toBe(content);
    });

    test('counts after trimming: 280 characters with surrounding spaces are accepted', async () => {
      const content = 'b'.repeat(280);
      expect((await createPost({ content: `   ${content}   ` })).content).toBe(content);
    });

    test('counts an emoji (astral character) as one character: 280 emoji are accepted', async () => {
      const content = EMOJI.repeat(280);
      const post = await createPost({ content });
      expect(post.content).toBe(content);
      expect([...post.content]).toHaveLength(280);
    });

    testPostFieldRejected('content', [
      ['281 emoji', EMOJI.repeat(281)],
      ['281 characters', 'a'.repeat(281)],
      ['an empty string', ''],
      ['whitespace-only content', ' \n\t  '],
    ]);
  });

  describe('quest_topic: required, one of the six topics', () => {
    test("the six topics are the contract's, in its order", () => {
      expect(QUEST_TOPICS.join(', ')).toBe(
        'digital_footprint, online_safety, digital_literacy, cyberbullying, privacy_security, digital_ethics',
      );
    });

    test.each(QUEST_TOPICS)('accepts %s', async (topic) => {
      expect((await createPost({ quest_topic: topic })).quest_topic).toBe(topic);
    });

    testPostFieldRejected('quest_topic', [
      ['"gaming"', 'gaming'],
      ['"Online_Safety"', 'Online_Safety'],
      ['"online_safety "', 'online_safety '],
      ['""', ''],
    ]);
  });

  describe('student_name: required, trimmed, 1..50 characters', () => {
    test('accepts exactly 50 characters', async () => {
      const name = 'n'.repeat(50);
      expect((await createPost({ student_name: name })).student_name).toBe(name);
    });

    test('accepts 50 emoji (one character each)', async () => {
      const name = EMOJI.repeat(50);
      expect((await createPost({ student_name: name })).student_name).toBe(name);
    });

    testPostFieldRejected('student_name', [
      ['51 characters', 'n'.repeat(51)],
      ['an empty name', ''],
      ['a whitespace-only name', '    '],
    ]);

    test('rejects null with 400 (required on a post)', async () => {
      expectBadRequest(await writePost(postBody({ student_name: null })), 'student_name');
    });
  });

  describe('types are strict (no coercion)', () => {
    test.each([
      ['content', 42],
      ['content', true],
      ['content', null],
      ['content', ['text']],
      ['content', { text: 'x' }],
      ['student_name', 7],
      ['student_name', false],
      ['quest_topic', 1],
      ['quest_topic', true],
    ])('%s = %j is a 400', async (field, value) => {
      const before = await stored();
      expectBadRequest(await writePost(postBody({ [field]: value })), field);
      expect(await stored()).toEqual(before);
    });
  });

  test('ignores unknown fields and the fields only the server sets (id, timestamp, counters)', async () => {
    const previous = await createPost();
    const res = await writePost({
      ...postBody({ content: 'Forged fields' }),
      id: previous.id,
      timestamp: '2001-01-01T00:00:00.000Z',
      created_at: '2001-01-01T00:00:00.000Z',
      reply_count: 42,
      replies: [
        { id: 1, post_id: 1, content: 'fake', student_name: 'x', timestamp: '2001-01-01T00:00:00.000Z' },
      ],
      reactions: { like: 99, love: 5, celebrate: 1, insightful: 2, support: 3 },
      like_count: 7,
      favourite_colour: 'green',
    });
    const post = expectJson(res, 201) as Post;
    expectPostShape(post);
    expect(post.id).toBeGreaterThan(previous.id);
    expect(post.content).toBe('Forged fields');
    expect(post.timestamp).not.toBe('2001-01-01T00:00:00.000Z');
    expect(Date.now() - Date.parse(post.timestamp)).toBeLessThan(60_000);
    expect(post.replies).toEqual([]);
    expect(post.reply_count).toBe(0);
    expect(post.reactions).toEqual(ZERO_REACTIONS);
    expect(post).not.toHaveProperty('favourite_colour');
    expect(await listed(post.id)).toEqual(post);
    expect(await listed(previous.id)).toEqual(previous);
  });

  test('a rejected post stores nothing', async () => {
    const before = await stored();
    expectBadRequest(await writePost(postBody({ content: 'x'.repeat(281) })), 'content');
    expectBadRequest(await writePost(postBody({ quest_topic: 'nope' })), 'quest_topic');
    expect(await stored()).toEqual(before);
  });
});

describe('GET /api/microblog (list posts)', () => {
  test('answers a JSON array of posts, newest first (id descending)', async () => {
    await createPost();
    await createPost();
    const { posts } = await list();
    expect(posts.length).toBeGreaterThanOrEqual(2);
    for (const post of posts) expectPostShape(post);
    const ids = posts.map((p) => p.id);
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    expect(new Set(ids).size).toBe(ids.length);
  });

  test('on one page, replies written to several posts in turn each go to their own post, oldest first', async () => {
    const a = await createPost();
    const quiet = await createPost();
    const b = await createPost();
    const c = await createPost();
    const b1 = await createReply(b.id, { content: 'b1' });
    const a1 = await createReply(a.id, { content: 'a1' });
    const c1 = await createReply(c.id, { content: 'c1' });
    const b2 = await createReply(b.id, { content: 'b2' });
    const a2 = await createReply(a.id, { content: 'a2' });
    const { posts } = await list(`?before=${c.id + 1}&limit=4`);
    expect(posts.map((p) => [p.id, p.replies])).toEqual([
      [c.id, [c1]],
      [b.id, [b1, b2]],
      [quiet.id, []],
      [a.id, [a1, a2]],
    ]);
  });

  test('each listed post carries its replies, reply_count and every reaction kind', async () => {
    const post = await createPost();
    const r1 = await createReply(post.id, { content: 'first' });
    const r2 = await createReply(post.id, { content: 'second', student_name: undefined });
    await react({ post_id: post.id, reaction_type: 'love' });
    const shown = await listed(post.id);
    expect(shown.replies).toEqual([r1, r2]);
    expect(shown.reply_count).toBe(2);
    expect(shown.reactions).toEqual({ ...ZERO_REACTIONS, love: 1 });
  });

  describe('limit (1..500, default 100)', () => {
    test('defaults to 100 posts, and the Link header then carries limit=100', async () => {
      const existing = (await allPostIds()).length;
      const missing = Math.max(0, 102 - existing);
      for (let i = 0; i < missing; i += 1) await createPost({ content: `filler ${i}` });
      const ids = await allPostIds();
      const { posts, link } = await list();
      expect(posts).toHaveLength(100);
      expect(posts.map((p) => p.id)).toEqual(ids.slice(0, 100));
      expect(link).toBe(`</api/microblog?before=${posts[99].id}&limit=100>; rel="next"`);
    });

    test('returns at most `limit` posts', async () => {
      await createPost();
      await createPost();
      await createPost();
      const ids = await allPostIds();
      expect((await list('?limit=1')).posts.map((p) => p.id)).toEqual(ids.slice(0, 1));
      expect((await list('?limit=3')).posts.map((p) => p.id)).toEqual(ids.slice(0, 3));
    });

    test('accepts the bounds 1 and 500', async () => {
      await createPost();
      expect((await list('?limit=1')).posts).toHaveLength(1);
      const all = await allPostIds();
      expect((await list('?limit=500')).posts).toHaveLength(Math.min(500, all.length));
    });

    test.each(['0', '501', '-1', 'abc', '1.5', '', '1e2x'])('limit=%j is a 400', async (limit) => {
      expectBadRequest(
        await app.inject({ method: 'GET', url: `/api/microblog?limit=${encodeURIComponent(limit)}` }),
        'limit',
      );
    });
  });

  describe('before (only posts with a smaller id)', () => {
    test('lists only posts with an id smaller than before, newest first', async () => {
      const a = await createPost();
      const b = await createPost();
      const c = await createPost();
      const { posts } = await list(`?before=${c.id}&limit=2`);
      expect(posts.map((p) => p.id)).toEqual([b.id, a.id]);
      const { posts: older } = await list(`?before=${b.id}`);
      expect(older.length).toBeGreaterThan(0);
      expect(older[0].id).toBe(a.id);
      for (const post of older) expect(post.id).toBeLessThan(b.id);
    });

    test('before=1 gives an empty array and no Link', async () => {
      const { posts, link } = await list('?before=1');
      expect(posts).toEqual([]);
      expect(link).toBeUndefined();
    });

    test.each(['0', 'x', '-5', '1.5', ''])('before=%j is a 400', async (before) => {
      expectBadRequest(
        await app.inject({ method: 'GET', url: `/api/microblog?before=${encodeURIComponent(before)}` }),
        'before',
      );
    });
  });

  describe('topic filter', () => {
    test('lists only posts of that topic', async () => {
      const mine = await createPost({ quest_topic: 'cyberbullying' });
      const other = await createPost({ quest_topic: 'privacy_security' });
      const { posts } = await list('?topic=cyberbullying&limit=500');
      expect(posts.length).toBeGreaterThan(0);
      for (const post of posts) expect(post.quest_topic).toBe('cyberbullying');
      expect(posts.map((p) => p.id)).toContain(mine.id);
      expect(posts.map((p) => p.id)).not.toContain(other.id);
      expect(posts.map((p) => p.id)).toEqual((await allPostIds('cyberbullying')).slice(0, 500));
    });

    test.each(['gaming', 'CYBERBULLYING', ''])('topic=%j is a 400', async (topic) => {
      expectBadRequest(
        await app.inject({ method: 'GET', url: `/api/microblog?topic=${encodeURIComponent(topic)}` }),
        'topic',
      );
    });
  });

  describe('Link header (keyset pagination)', () => {
    test('has the exact form </api/microblog?before=ID&limit=N>; rel="next" when more posts exist', async () => {
      await createPost();
      const b = await createPost();
      const c = await createPost();
      const { posts, link } = await list('?limit=2');
      expect(posts.map((p) => p.id)).toEqual([c.id, b.id]);
      expect(link).toBe(`</api/microblog?before=${b.id}&limit=2>; rel="next"`);
    });

    test('is absent when the page holds the last post, even when the page is exactly full', async () => {
      const ids = await allPostIds();
      if (ids.length < 2) {
        await createPost();
        await createPost();
      }
      const [oldest, secondOldest] = (await allPostIds()).reverse();
      const lastFull = await list(`?before=${oldest + 1}&limit=1`);
      expect(lastFull.posts.map((p) => p.id)).toEqual([oldest]);
      expect(lastFull.link).toBeUndefined();
      const lastPartial = await list(`?before=${secondOldest + 1}&limit=5`);
      expect(lastPartial.posts.map((p) => p.id)).toEqual([secondOldest, oldest]);
      expect(lastPartial.link).toBeUndefined();
      const notLast = await list(`?before=${secondOldest + 1}&limit=1`);
      expect(notLast.posts.map((p) => p.id)).toEqual([secondOldest]);
      expect(notLast.link).toBe(`</api/microblog?before=${secondOldest}&limit=1>; rel="next"`);
    });

    test('keeps topic and limit when filtered', async () => {
      const a = await createPost({ quest_topic: 'digital_ethics' });
      await createPost({ quest_topic: 'online_safety' });
      const b = await createPost({ quest_topic: 'digital_ethics' });
      const c = await createPost({ quest_topic: 'digital_ethics' });
      const { posts, link } = await list('?topic=digital_ethics&limit=2');
      expect(posts.map((p) => p.id)).toEqual([c.id, b.id]);
      const next = nextLink(link);
      expect(next.pathname).toBe('/api/microblog');
      expect(Object.fromEntries(next.searchParams)).toEqual({
        before: String(b.id),
        limit: '2',
        topic: 'digital_ethics',
      });
      const following = await app.inject({ method: 'GET', url: `${next.pathname}${next.search}` });
      const page = expectJson(following, 200) as Post[];
      expect(page[0].id).toBe(a.id);
      for (const post of page) expect(post.quest_topic).toBe('digital_ethics');
    });

    test('following it walks every post exactly once, newest first', async () => {
      for (let i = 0; i < 5; i += 1) await createPost();
      const expected = await allPostIds();
      const { ids, pages } = await walk('/api/microblog?limit=7');
      expect(ids).toEqual(expected);
      expect(new Set(ids).size).toBe(ids.length);
      expect(pages).toBe(Math.max(1, Math.ceil(expected.length / 7)));
    });

    test('following it with a topic walks every post of that topic exactly once', async () => {
      for (let i = 0; i < 5; i += 1) await createPost({ quest_topic: 'privacy_security' });
      const expected = await allPostIds('privacy_security');
      const { ids } = await walk('/api/microblog?topic=privacy_security&limit=2');
      expect(ids).toEqual(expected);
    });
  });

  describe('with an empty database', () => {
    let fresh: TestApp;

    beforeAll(async () => {
      fresh = await buildTestApp();
    });

    afterAll(async () => {
      await fresh?.close();
    });

    test('answers 200 [] without a Link header', async () => {
      const res = await fresh.app.inject({ method: 'GET', url: '/api/microblog' });
      expect(expectJson(res, 200)).toEqual([]);
      expect(res.body).toBe('[]');
      expect(res.headers.link).toBeUndefined();
    });
  });
});

describe('POST /api/microblog/reply (reply to a post)', () => {
  test('answers 201 with the created reply', async () => {
    const post = await createPost();
    const before = Date.now();
    const res = await writeReply({ post_id: post.id, content: 'Great point!', student_name: 'Bob' });
    const reply = expectJson(res, 201) as Reply;
    expectReplyShape(reply);
    expect(reply).toMatchObject({ post_id: post.id, content: 'Great point!', student_name: 'Bob' });
    expect(res.body).toMatch(new RegExp(`"id":${reply.id}[,}]`));
    expect(res.body).toMatch(new RegExp(`"post_id":${post.id}[,}]`));
    expect(Date.parse(reply.timestamp)).toBeGreaterThanOrEqual(before - 5_000);
    expect(Date.parse(reply.timestamp)).toBeLessThanOrEqual(Date.now() + 5_000);
    const shown = await listed(post.id);
    expect(shown.replies).toEqual([reply]);
    expect(shown.reply_count).toBe(1);
  });

  test('trims content and student_name; stores text raw', async () => {
    const post = await createPost();
    const reply = await createReply(post.id, { content: '  <b>me too</b> &amp;  ', student_name: '  Cy  ' });
    expect(reply.content).toBe('<b>me too</b> &amp;');
    expect(reply.student_name).toBe('Cy');
    expect((await listed(post.id)).replies[0]).toEqual(reply);
  });

  describe('post_id: a number or a string of digits; aliases postId and microblogId', () => {
    test.each(POST_ID_SPELLINGS)('accepts %s', async (_name, idField) => {
      const post = await createPost();
      const res = await writeReply({ ...idField(post.id), content: 'aliased' });
      const reply = expectJson(res, 201) as Reply;
      expect(reply.post_id).toBe(post.id);
      expect((await listed(post.id)).replies.map((r) => r.id)).toEqual([reply.id]);
    });

    test.each([
      ['a boolean', true],
      ['a fraction', 1.5],
      ['zero', 0],
      ['a negative number', -3],
      ['null', null],
      ['a non-digit string', '12abc'],
      ['an empty string', ''],
      ['an object', { id: 1 }],
    ])('rejects %s with 400', async (_name, value) => {
      const before = await stored();
      expectBadRequest(await writeReply({ post_id: value, content: 'x' }), 'post_id');
      expect(await stored()).toEqual(before);
    });

    test('rejects a missing post_id with 400', async () => {
      expectBadRequest(await writeReply({ content: 'orphan' }), 'post_id');
    });
  });

  describe('student_name: optional', () => {
    test('absent → null', async () => {
      const post = await createPost();
      const res = await writeReply({ post_id: post.id, content: 'anonymous' });
      const reply = expectJson(res, 201) as Reply;
      expect(reply.student_name).toBeNull();
      expect(res.body).toContain('"student_name":null');
      expect((await listed(post.id)).replies[0].student_name).toBeNull();
    });

    test('null is accepted → null', async () => {
      const post = await createPost();
      const reply = await createReply(post.id, { student_name: null });
      expect(reply.student_name).toBeNull();
    });

    test('accepts 50 characters', async () => {
      const post = await createPost();
      expect((await createReply(post.id, { student_name: 'r'.repeat(50) })).student_name).toBe(
        'r'.repeat(50),
      );
    });

    test.each([
      ['51 characters', 'r'.repeat(51)],
      ['an empty string', ''],
      ['whitespace only', '   '],
      ['a number', 5],
      ['a boolean', true],
    ])('rejects %s with 400', async (_name, value) => {
      const post = await createPost();
      expectBadRequest(
        await writeReply({ post_id: post.id, content: 'x', student_name: value }),
        'student_name',
      );
      expect((await listed(post.id)).reply_count).toBe(0);
    });
  });

  describe('content: same rules as a post', () => {
    test('accepts 280 emoji', async () => {
      const post = await createPost();
      expect((await createReply(post.id, { content: EMOJI.repeat(280) })).content).toBe(EMOJI.repeat(280));
    });

    test.each([
      ['281 characters', 'c'.repeat(281)],
      ['281 emoji', EMOJI.repeat(281)],
      ['an empty string', ''],
      ['whitespace only', ' \t\n '],
      ['a number', 12],
      ['a boolean', false],
      ['null', null],
    ])('rejects %s with 400', async (_name, value) => {
      const post = await createPost();
      expectBadRequest(await writeReply({ post_id: post.id, content: value }), 'content');
      const shown = await listed(post.id);
      expect(shown.reply_count).toBe(0);
      expect(shown.replies).toEqual([]);
    });

    test('rejects a missing content with 400', async () => {
      const post = await createPost();
      expectBadRequest(await writeReply({ post_id: post.id }), 'content');
    });
  });

  test('ignores unknown fields and server-set fields (id, timestamp)', async () => {
    const post = await createPost();
    const earlier = await createReply(post.id);
    const res = await writeReply({
      post_id: post.id,
      content: 'with extras',
      id: earlier.id,
      timestamp: '2001-01-01T00:00:00.000Z',
      mood: 'happy',
    });
    const reply = expectJson(res, 201) as Reply;
    expectReplyShape(reply);
    expect(reply.id).toBeGreaterThan(earlier.id);
    expect(reply.timestamp).not.toBe('2001-01-01T00:00:00.000Z');
    expect(reply).not.toHaveProperty('mood');
    expect((await listed(post.id)).replies).toEqual([earlier, reply]);
  });

  describe('404 when post_id names no post', () => {
    test.each([
      ['an unused id', 987654],
      ['an unused id as a digit string', '987654'],
      ['the largest id', 2147483647],
      ['a huge digit string', '9999999999'],
      ['an unused id as postId', { postId: 987654 }],
      ['an unused id as microblogId', { microblogId: '987654' }],
    ])('%s', (_name, value) => expectNoSuchPost(writeReply, value, { content: 'nobody home' }));
  });

  test('replies are embedded oldest first; at most 100, while reply_count counts them all', async () => {
    const post = await createPost();
    const replies: Reply[] = [];
    for (let i = 0; i < 103; i += 1) replies.push(await createReply(post.id, { content: `reply ${i}` }));
    const ids = replies.map((r) => r.id);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));

    const shown = await listed(post.id);
    expect(shown.reply_count).toBe(103);
    expect(shown.replies).toHaveLength(100);
    expect(shown.replies).toEqual(replies.slice(0, 100));
    expect(shown.replies[0].content).toBe('reply 0');
    expect(shown.replies[99].content).toBe('reply 99');

    // the same through the full list and the reaction answer
    const inList = (await list('?limit=500')).posts.find((p) => p.id === post.id);
    expect(inList?.replies).toEqual(replies.slice(0, 100));
    const reacted = await react({ post_id: post.id });
    expect(reacted.reply_count).toBe(103);
    expect(reacted.replies).toEqual(replies.slice(0, 100));
  });

  test('concurrent replies are all counted', async () => {
    const post = await createPost();
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => writeReply({ post_id: post.id, content: `concurrent ${i}` })),
    );
    for (const res of results) expect(res.statusCode).toBe(201);
    const shown = await listed(post.id);
    expect(shown.reply_count).toBe(20);
    expect(shown.replies).toHaveLength(20);
  });
});

describe('POST /api/microblog/reaction (react to a post)', () => {
  test('answers 200 with the updated post; reaction_type defaults to like', async () => {
    const post = await createPost();
    const res = await writeReaction({ post_id: post.id });
    const updated = expectJson(res, 200) as Post;
    expectPostShape(updated);
    expect(updated).toEqual({ ...post, reactions: { ...ZERO_REACTIONS, like: 1 } });
    expect((await listed(post.id)).reactions).toEqual({ ...ZERO_REACTIONS, like: 1 });
  });

  test.each(KINDS)('reaction_type %s adds one to that kind only', async (kind) => {
    const post = await createPost();
    const once = await react({ post_id: post.id, reaction_type: kind });
    expect(once.reactions).toEqual({ ...ZERO_REACTIONS, [kind]: 1 });
    const twice = await react({ post_id: post.id, reaction_type: kind });
    expect(twice.reactions).toEqual({ ...ZERO_REACTIONS, [kind]: 2 });
  });

  test('accepts the alias reactionType', async () => {
    const post = await createPost();
    const updated = await react({ post_id: post.id, reactionType: 'celebrate' });
    expect(updated.reactions).toEqual({ ...ZERO_REACTIONS, celebrate: 1 });
  });

  test.each(POST_ID_SPELLINGS)('accepts %s', async (_name, idField) => {
    const post = await createPost();
    const updated = await react({ ...idField(post.id), reaction_type: 'support' });
    expect(updated.id).toBe(post.id);
    expect(updated.reactions).toEqual({ ...ZERO_REACTIONS, support: 1 });
  });

  test('answers the post with its replies', async () => {
    const post = await createPost();
    const reply = await createReply(post.id);
    const updated = await react({ post_id: post.id, reaction_type: 'insightful' });
    expect(updated.replies).toEqual([reply]);
    expect(updated.reply_count).toBe(1);
  });

  test.each([
    ['an unknown reaction_type', { reaction_type: 'angry' }, 'reaction_type'],
    ['an unknown reactionType', { reactionType: 'dislike' }, 'reactionType'],
    ['a differently cased kind', { reaction_type: 'Like' }, 'reaction_type'],
    ['a numeric reaction_type', { reaction_type: 1 }, 'reaction_type'],
    ['a boolean reaction_type', { reaction_type: true }, 'reaction_type'],
  ])('rejects %s with 400 and counts nothing', async (_name, extra, field) => {
    const post = await createPost();
    expectBadRequest(await writeReaction({ post_id: post.id, ...extra }), field);
    expect((await listed(post.id)).reactions).toEqual(ZERO_REACTIONS);
  });

  test.each([
    ['a boolean', true],
    ['a fraction', 2.5],
    ['a non-digit string', 'abc'],
    ['null', null],
  ])('rejects post_id as %s with 400', async (_name, value) => {
    expectBadRequest(await writeReaction({ post_id: value }), 'post_id');
  });

  test('rejects a missing post_id with 400', async () => {
    expectBadRequest(await writeReaction({ reaction_type: 'like' }), 'post_id');
  });

  describe('404 when post_id names no post', () => {
    test.each([
      ['an unused id', 987654],
      ['an unused id as a digit string', '987654'],
      ['a huge digit string', '9999999999'],
      ['an unused postId', { postId: 987654 }],
    ])('%s', (_name, value) => expectNoSuchPost(writeReaction, value, { reaction_type: 'love' }));
  });

  test('ignores unknown and server-set fields: each request adds exactly one', async () => {
    const post = await createPost();
    const updated = await react({
      post_id: post.id,
      reaction_type: 'love',
      count: 50,
      reactions: { love: 99 },
      love_count: 99,
      id: 1,
    });
    expect(updated.id).toBe(post.id);
    expect(updated.reactions).toEqual({ ...ZERO_REACTIONS, love: 1 });
  });

  test('concurrent reactions never lose a count', async () => {
    const post = await createPost();
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        writeReaction({ post_id: post.id, reaction_type: i % 2 ? 'like' : 'love' }),
      ),
    );
    for (const res of results) expect(res.statusCode).toBe(200);
    expect((await listed(post.id)).reactions).toEqual({ ...ZERO_REACTIONS, like: 15, love: 15 });
  });
});
