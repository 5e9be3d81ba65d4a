import { startTestServer, type TestServer } from '@platform/microblog-api/test-support';
import { proveStreamMessage } from '@platform/testing';
import {
  committedDocument,
  documentProvenByClient,
  recorder,
  type Recorder,
} from '@platform/client-kit/testing';
import {
  ApiError,
  createMicroblogClient,
  type MicroblogClient,
  type MicroblogEvent,
  type Post,
  type Problem,
} from '../src/index.js';

/**
 * The client against the real service on a real port: every operation of the committed document is
 * called through it (the last test checks), errors come back typed from the document, and the live
 * stream resumes from its last id when the server drops it.
 */
const document = committedDocument('microblog-api');

let server: TestServer;
let calls: Recorder;
let client: MicroblogClient;

beforeAll(async () => {
  // A `retry:` hint that leaves a dropped stream away long enough for writes to happen meanwhile.
  server = await startTestServer({}, { EVENTS_RETRY_MS: '500' });
  // Each message a stream gives the client is proven against the document, as the services' tests' are.
  calls = recorder(document, undefined, proveStreamMessage);
  client = createMicroblogClient({ baseUrl: server.baseUrl, fetch: calls.fetch });
});
afterAll(() => server?.close());

/** How many times the stream `operation` has opened (answered 200) so far. */
const opens = (operation: string) =>
  calls.calls.filter((c) => c.operation === operation && c.status === 200).length;
/** Waits until the stream has opened once more than `before` times: it then receives every later event. */
async function opened(operation: string, before: number): Promise<void> {
  for (let i = 0; i < 1000 && opens(operation) <= before; i++)
    await new Promise((resolve) => setTimeout(resolve, 10));
  expect(opens(operation)).toBeGreaterThan(before);
}

const newPost = async (content: string, quest_topic: Post['quest_topic'] = 'online_safety') => {
  const { data, error } = await client.POST('/api/microblog', {
    body: { content, quest_topic, student_name: 'Ada' },
  });
  expect(error).toBeUndefined();
  return data!;
};

/** The next `n` events of a stream (it stays open for the caller). */
async function next(events: AsyncGenerator<MicroblogEvent, void>, n: number): Promise<MicroblogEvent[]> {
  const out: MicroblogEvent[] = [];
  while (out.length < n) {
    const { value, done } = await events.next();
    if (done) break;
    out.push(value);
  }
  return out;
}

describe('operations for operators and the panel', () => {
  test('health, readiness, metrics, the panel page', async () => {
    expect((await client.GET('/healthz')).data).toEqual({ status: 'ok' });
    expect((await client.GET('/readyz')).response.status).toBe(200);
    const metrics = await client.GET('/metrics', { parseAs: 'text' });
    expect(metrics.data).toMatch(/^# HELP /m);
    const panel = await client.GET('/', { parseAs: 'text' });
    expect(panel.data).toMatch(/<html/i);
  });
});

describe('posts, replies, reactions', () => {
  test('a post, a reply and a reaction, typed by the document', async () => {
    const post = await newPost('Think before you share');
    expect(post).toMatchObject({ content: 'Think before you share', reply_count: 0, replies: [] });

    const reply = await client.POST('/api/microblog/reply', {
      body: { post_id: post.id, content: 'Agreed', student_name: null },
    });
    expect(reply.data).toMatchObject({ post_id: post.id, content: 'Agreed', student_name: null });

    const reacted = await client.POST('/api/microblog/reaction', {
      body: { post_id: post.id, reaction_type: 'love' },
    });
    expect(reacted.data?.reactions.love).toBe(1);

    const list = await client.GET('/api/microblog', { params: { query: { limit: 10 } } });
    expect(list.data?.find((p) => p.id === post.id)).toMatchObject({ reply_count: 1 });
  });

  test('errors are problem details, typed from the document', async () => {
    const invalid = await client.POST('/api/microblog', {
      // @ts-expect-error -- the document requires quest_topic: the type says so before the server does
      body: { content: 'no topic', student_name: 'Ada' },
    });
    const problem: Problem | undefined = invalid.error;
    expect(invalid.response.status).toBe(400);
    expect(problem).toMatchObject({ status: 400, title: 'Bad Request' });

    const missing = await client.POST('/api/microblog/reply', {
      body: { post_id: 2147483647, content: 'hello?' },
    });
    expect(missing.response.status).toBe(404);
    expect(missing.error?.status).toBe(404);

    const reaction = await client.POST('/api/microblog/reaction', { body: { post_id: 2147483647 } });
    expect(reaction.error).toMatchObject({ status: 404 });

    const badLimit = await client.GET('/api/microblog', { params: { query: { limit: 0 } } });
    expect(badLimit.error).toMatchObject({ status: 400 });
  });
});

describe('Link pagination', () => {
  test('pages() follows rel="next" until the last page, keeping the topic and limit', async () => {
    const made: Post[] = [];
    for (let i = 1; i <= 5; i++) made.push(await newPost(`ethics ${i}`, 'digital_ethics'));
    const pages: number[][] = [];
    for await (const page of client.pages({ topic: 'digital_ethics', limit: 2 }))
      pages.push(page.map((p) => p.id));
    expect(pages).toEqual([[made[4].id, made[3].id], [made[2].id, made[1].id], [made[0].id]]);
    const ids: number[] = [];
    for await (const post of client.posts({ topic: 'digital_ethics', limit: 2 })) {
      ids.push(post.id);
      if (ids.length === 3) break; // stops early: no further page is asked for
    }
    expect(ids).toEqual([made[4].id, made[3].id, made[2].id]);
  });

  test('page(): one page and the query of the next one, none after the last', async () => {
    const made: Post[] = [];
    for (let i = 1; i <= 3; i++) made.push(await newPost(`bullying ${i}`, 'cyberbullying'));
    const first = await client.page({ topic: 'cyberbullying', limit: 2 });
    expect(first.posts.map((p) => p.id)).toEqual([made[2].id, made[1].id]);
    expect(first.next).toEqual({ topic: 'cyberbullying', limit: 2, before: made[1].id });
    const last = await client.page(first.next);
    expect(last.posts.map((p) => p.id)).toEqual([made[0].id]);
    expect(last).not.toHaveProperty('next');
  });

  test('a page that fails throws an ApiError with the problem details', async () => {
    const error = await (async () => {
      for await (const page of client.pages({ limit: 501 })) void page;
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ status: 400, body: { status: 400 } });
  });
});

describe('the live stream', () => {
  test('events in order; after the server drops the connection, resumed from the last id', async () => {
    const controller = new AbortController();
    const reconnections: number[] = [];
    const connections: number[] = [];
    const before = opens('GET /api/microblog/events');
    const events = client.events({
      topic: 'privacy_security',
      signal: controller.signal,
      onReconnect: ({ attempt }) => reconnections.push(attempt),
      onOpen: ({ attempt }) => connections.push(attempt),
    });
    // The stream opens on the first next(): ask for it, then write.
    const first = next(events, 2);
    await opened('GET /api/microblog/events', before);
    const post = await newPost('Lock your phone', 'privacy_security');
    await client.POST('/api/microblog/reaction', { body: { post_id: post.id } });
    const received = await first;
    expect(received.map((e) => e.event)).toEqual(['post', 'reaction']);
    const firstEvent = received[0];
    if (firstEvent.event === 'post') expect(firstEvent.data.id).toBe(post.id);

    // The server drops every connection (the stream's too); what happens meanwhile is replayed.
    server.app.server.closeAllConnections();
    // (A pooled keep-alive connection of fetch needs a moment to see that it was closed.)
    await new Promise((resolve) => setTimeout(resolve, 20));
    await client.POST('/api/microblog/reply', { body: { post_id: post.id, content: 'while away' } });
    await client.POST('/api/microblog/reaction', { body: { post_id: post.id, reaction_type: 'support' } });
    const after = await next(events, 2);
    expect(after.map((e) => e.event)).toEqual(['reply', 'reaction']);
    expect(reconnections).toEqual([1]);
    expect(connections).toEqual([0, 1]);
    const ids = [...received, ...after].map((e) => e.id!);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(4);
    controller.abort();
    expect(await events.next()).toEqual({ done: true, value: undefined });
  });

  test('an id the server does not know gets a reset event, yielded', async () => {
    const events = client.events({ lastEventId: 999_999_999 });
    const [reset] = await next(events, 1);
    expect(reset.event).toBe('reset');
    await events.return();
  });

  test('a refused stream ends the iterator with the typed error', async () => {
    const error = await (async () => {
      // @ts-expect-error -- not a topic of the document
      for await (const event of client.events({ topic: 'nope' })) void event;
    })().catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 400, body: { status: 400 } });
  });
});

documentProvenByClient(() => calls);
