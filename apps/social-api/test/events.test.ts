/**
 * The live streams, GET /api/events/posts and GET /api/events/feed, over real HTTP sockets and the
 * real database: every post, edit and delete as GET /api/posts shows them; a feed that shows only its
 * authors' posts and follows its follows; the token in the header or the query, its end (expired,
 * revoked) ending the stream with `token_expired`; replay from a last id; a slow reader dropped; the
 * cap on open streams in the service's error format; the routes documented.
 */
import { sql } from 'kysely';
import { openEventStream, type EventStreamClient, type SseMessage } from '@platform/testing';
import type { Post } from '../src/posts/schemas';
import { startTestServer, type TestServer } from './support/server';
import type { TestUser } from './support/app';

jest.setTimeout(30_000);

const FAST = { EVENTS_HEARTBEAT_MS: '100', EVENTS_RETRY_MS: '250', EVENTS_TOKEN_CHECK_MS: '50' };

const servers: TestServer[] = [];
const streams: EventStreamClient[] = [];

async function server(env: Record<string, string> = {}): Promise<TestServer> {
  const started = await startTestServer({ ...FAST, ...env });
  servers.push(started);
  return started;
}

async function open(s: TestServer, path: string, token?: string, query = '') {
  const opened = await openEventStream(
    `${s.baseUrl}/api/events/${path}${query}`,
    token ? { authorization: `Bearer ${token}` } : {},
  );
  streams.push(opened);
  return opened;
}

afterEach(async () => {
  for (const s of streams.splice(0)) s.close();
  for (const s of servers.splice(0)) await s.close();
});

async function write(s: TestServer, user: TestUser, text: string): Promise<Post> {
  const response = await s.as(user.token, { method: 'POST', url: '/api/posts', payload: { text } });
  expect(response.statusCode).toBe(201);
  return response.json() as Post;
}

async function follow(s: TestServer, who: TestUser, whom: TestUser, method: 'POST' | 'DELETE' = 'POST') {
  const response = await s.as(who.token, { method, url: `/api/me/following/${whom.id}` });
  expect(response.statusCode).toBe(204);
}

const kinds = (messages: SseMessage[]) => messages.map((m) => m.event);
const dataOf = (message: SseMessage) => JSON.parse(message.data) as Record<string, unknown>;
/** The stream is ready once its `retry:` hint has come (the hub has it). */
const opened = (s: EventStreamClient) => s.until((c) => c.blocks.some((b) => b.retry !== undefined), 3000);

describe('GET /api/events/posts', () => {
  test('needs a token: 401 in the service’s format without one', async () => {
    const s = await server();
    const refused = await open(s, 'posts');
    expect(refused.status).toBe(401);
    await refused.ended;
    expect(JSON.parse(refused.text)).toMatchObject({ code: 401, message: 'Unauthorized' });
  });

  test('every new, edited and deleted post, as GET /api/posts/<id> shows it, in id order', async () => {
    const s = await server();
    const [ada, bob] = await s.registerEach('ada', 'bob');
    const live = await open(s, 'posts', bob.token);
    expect(live.status).toBe(200);
    expect(live.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    await opened(live);

    const post = await write(s, ada, 'hello, stream');
    expect(
      (await s.as(ada.token, { method: 'PUT', url: `/api/posts/${post.id}`, payload: { text: 'edited' } }))
        .statusCode,
    ).toBe(200);
    expect((await s.as(ada.token, { method: 'DELETE', url: `/api/posts/${post.id}` })).statusCode).toBe(204);
    const messages = await live.messagesUntil(3);
    expect(kinds(messages)).toEqual(['post', 'post_updated', 'post_deleted']);
    const ids = messages.map((m) => Number(m.id));
    expect(ids[1]).toBeGreaterThan(ids[0]);
    expect(ids[2]).toBeGreaterThan(ids[1]);

    // The post as another user reads it: same fields in the same order, the author included.
    const created = dataOf(messages[0]) as unknown as Post;
    expect(Object.keys(created)).toEqual(Object.keys(post));
    expect(Object.keys(created.author)).toEqual(Object.keys(post.author));
    expect(created).toMatchObject({
      id: post.id,
      url: post.url,
      text: 'hello, stream',
      timestamp: post.timestamp,
    });
    expect(created.author).toMatchObject({ id: ada.id, username: 'ada', url: `/api/users/${ada.id}` });
    expect(dataOf(messages[1])).toMatchObject({ id: post.id, text: 'edited', timestamp: post.timestamp });
    expect(messages[2].data).toBe(JSON.stringify({ id: post.id, author_id: ada.id }));
  });

  test('the token as `access_token` in the query, for a browser’s EventSource', async () => {
    const s = await server();
    const [ada] = await s.registerEach('ada');
    const live = await open(s, 'posts', undefined, `?access_token=${encodeURIComponent(ada.token)}`);
    expect(live.status).toBe(200);
    await opened(live);
    await write(s, ada, 'through the query');
    expect(kinds(await live.messagesUntil(1))).toEqual(['post']);
  });

  test('a client back with its last id gets what it missed, in order, once; then the live ones', async () => {
    const s = await server();
    const [ada] = await s.registerEach('ada');
    const first = await open(s, 'posts', ada.token);
    await opened(first);
    await write(s, ada, 'seen');
    const [seen] = await first.messagesUntil(1);
    first.close();
    await write(s, ada, 'missed 1');
    await write(s, ada, 'missed 2');
    const back = await open(s, 'posts', ada.token, `?last_event_id=${seen.id}`);
    const replayed = await back.messagesUntil(2);
    expect(replayed.map((m) => (dataOf(m) as { text: string }).text)).toEqual(['missed 1', 'missed 2']);
    await write(s, ada, 'live again');
    const all = await back.messagesUntil(3);
    expect(all.map((m) => (dataOf(m) as { text: string }).text)).toEqual([
      'missed 1',
      'missed 2',
      'live again',
    ]);
  });
});

describe('GET /api/events/feed', () => {
  test('a follower sees a followed user’s posts and their own; a non-follower does not', async () => {
    const s = await server();
    const [star, fan, stranger] = await s.registerEach('star', 'fan', 'stranger');
    await follow(s, fan, star);
    const fanFeed = await open(s, 'feed', fan.token);
    const strangerFeed = await open(s, 'feed', stranger.token);
    await Promise.all([opened(fanFeed), opened(strangerFeed)]);

    const post = await write(s, star, 'for my fans');
    await write(s, fan, 'my own');
    await write(s, stranger, 'nobody follows me');
    const fanMessages = await fanFeed.messagesUntil(2);
    expect(fanMessages.map((m) => (dataOf(m) as { text: string }).text)).toEqual(['for my fans', 'my own']);
    // The stranger's stream: only their own post, never the star's or the fan's.
    const strangerMessages = await strangerFeed.messagesUntil(1);
    expect(strangerMessages.map((m) => (dataOf(m) as { text: string }).text)).toEqual(['nobody follows me']);

    // A delete of a followed user's post arrives as a delete.
    expect((await s.as(star.token, { method: 'DELETE', url: `/api/posts/${post.id}` })).statusCode).toBe(204);
    const afterDelete = await fanFeed.messagesUntil(3);
    expect(afterDelete[2]).toMatchObject({ event: 'post_deleted' });
    expect(dataOf(afterDelete[2])).toEqual({ id: post.id, author_id: star.id });
    await write(s, stranger, 'still nobody');
    await strangerFeed.messagesUntil(2);
    expect(fanFeed.messages).toHaveLength(3);
  });

  test('following someone mid-stream: `feed_changed`, then their posts; unfollowing stops them', async () => {
    const s = await server();
    const [writer, reader] = await s.registerEach('writer', 'reader');
    const feed = await open(s, 'feed', reader.token);
    await opened(feed);
    await write(s, writer, 'before the follow');
    await follow(s, reader, writer);
    await write(s, writer, 'after the follow');
    await follow(s, reader, writer, 'DELETE');
    await write(s, writer, 'after the unfollow');
    await write(s, reader, 'mine');
    const messages = await feed.messagesUntil(4);
    expect(kinds(messages)).toEqual(['feed_changed', 'post', 'feed_changed', 'post']);
    expect(dataOf(messages[0])).toEqual({ follower_id: reader.id, user_id: writer.id, following: true });
    expect((dataOf(messages[1]) as { text: string }).text).toBe('after the follow');
    expect(dataOf(messages[2])).toEqual({ follower_id: reader.id, user_id: writer.id, following: false });
    expect((dataOf(messages[3]) as { text: string }).text).toBe('mine');
  });

  test('an expired token ends the stream with `token_expired` (expired); the client keeps its last id', async () => {
    const s = await server();
    const [ada] = await s.registerEach('ada');
    const feed = await open(s, 'feed', ada.token);
    await opened(feed);
    await write(s, ada, 'before the end');
    const [last] = await feed.messagesUntil(1);
    s.clock.advance(s.config.accessTokenMs + 1000);
    await feed.until((c) => c.messages.length === 2, 5000, 'token_expired');
    await feed.ended;
    const end = feed.messages[1];
    expect(end).toMatchObject({ event: 'token_expired' });
    expect(end.id).toBeUndefined();
    expect(dataOf(end)).toEqual({ reason: 'expired' });
    expect(last.id).toBeDefined();
  });

  test('a revoked token (logout) ends the stream with `token_expired` (revoked)', async () => {
    const s = await server();
    const [ada] = await s.registerEach('ada');
    const feed = await open(s, 'posts', ada.token);
    await opened(feed);
    expect((await s.as(ada.token, { method: 'DELETE', url: '/api/tokens' })).statusCode).toBe(204);
    await feed.until((c) => c.messages.length === 1, 5000, 'token_expired');
    await feed.ended;
    expect(feed.messages[0]).toMatchObject({ event: 'token_expired' });
    expect(dataOf(feed.messages[0])).toEqual({ reason: 'revoked' });
  });

  test('a slow reader is dropped, not buffered without bound; the others keep reading', async () => {
    const s = await server();
    const [ada] = await s.registerEach('ada');
    const slow = await open(s, 'feed', ada.token);
    const reader = await open(s, 'feed', ada.token);
    await Promise.all([opened(slow), opened(reader)]);
    slow.pause();
    // 18,000 posts of 280 characters, 300 a statement (written to the log as the posts repository
    // writes them): 11 MB, far more than the sockets' buffers and the limit.
    const author = {
      id: ada.id,
      username: ada.username,
      email: ada.email,
      about_me: null,
      first_seen: '2026-11-28T00:00:00.000Z',
      last_seen: '2026-11-28T00:00:00.000Z',
      has_password: true,
      posts_count: 0,
      followers_count: 0,
      following_count: 0,
    };
    for (let i = 0; i < 60; i++) {
      await sql`insert into events (kind, payload)
        select 'post', ${JSON.stringify(author)}::jsonb
          || jsonb_build_object('post_id', n, 'post_text', repeat('x', 280), 'post_timestamp', '2026-11-28T00:00:00.000Z')
        from generate_series(1, 300) n`.execute(s.database.db);
      await new Promise((r) => setTimeout(r, 10));
    }
    await reader.messagesUntil(18_000, 20_000);
    expect(s.app.eventStream.hub.dropped).toBe(1);
    slow.response.resume();
    await slow.ended;
    expect(slow.text.length).toBeLessThan(60 * 100_000);
  });

  test('past the open-stream cap: 503 in the service’s format, with Retry-After', async () => {
    const s = await server({ EVENTS_MAX_STREAMS: '1' });
    const [ada] = await s.registerEach('ada');
    const first = await open(s, 'feed', ada.token);
    await opened(first);
    const refused = await open(s, 'posts', ada.token);
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBeDefined();
    await refused.ended;
    const body = JSON.parse(refused.text) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(['code', 'description', 'message']);
    expect(body.code).toBe(503);
  });
});

test('both streams are documented: text/event-stream with each event’s schema, and their errors', async () => {
  const s = await server();
  const doc = (await s.app.inject({ method: 'GET', url: '/apispec.json' })).json() as {
    paths: Record<
      string,
      { get: { responses: Record<string, { content?: Record<string, { schema: unknown }> }> } }
    >;
  };
  for (const [path, events] of [
    ['/api/events/posts', ['post', 'post_updated', 'post_deleted', 'token_expired', 'reset']],
    ['/api/events/feed', ['post', 'post_updated', 'post_deleted', 'token_expired', 'feed_changed', 'reset']],
  ] as const) {
    const responses = doc.paths[path].get.responses;
    expect(Object.keys(responses).sort()).toEqual(['200', '400', '401', '500', '503']);
    const schema = JSON.stringify(responses['200'].content!['text/event-stream'].schema);
    for (const event of events) expect(schema).toContain(`"enum":["${event}"]`);
    // `token_expired` is the stream's own last word: no `id:` (the client resumes from the log's last).
    const ending = (
      responses['200'].content!['text/event-stream'].schema as {
        anyOf: { title: string; required: string[] }[];
      }
    ).anyOf.find((m) => m.title === 'token_expired');
    expect(ending?.required).toEqual(['event', 'data']);
  }
});
