/**
 * The live stream, GET /api/microblog/events, over real HTTP sockets and the real database: events
 * of every write, replay from Last-Event-ID (header and query) in order and without duplicates, reset
 * for an id the log no longer has, the topic filter, the heartbeat and retry hints, two instances on
 * one database, the listener's connection killed during writes, a slow reader dropped, the cap on
 * open streams, the end of streams when the app closes, and a class of 30 panels behind one address.
 */
import { sql } from 'kysely';
import type { FastifyInstance } from 'fastify';
import { openDatabase } from '@platform/db';
import { openEventStream, type EventStreamClient, type SseMessage } from '@platform/testing';
import { buildApp } from '../src/app';
import type { MicroblogDatabase } from '../src/db/schema';
import type { Post, Reply } from '../src/posts/schemas';
import { startTestServer, type TestServer } from './support/server';

jest.setTimeout(30_000);

const FAST = { EVENTS_HEARTBEAT_MS: '100', EVENTS_RETRY_MS: '250' };

/** A post's counters of no reaction, as events written straight into the log carry them. */
const REACTIONS = JSON.stringify({ like: 0, love: 0, celebrate: 0, insightful: 0, support: 0 });

const servers: TestServer[] = [];
const streams: EventStreamClient[] = [];

async function server(env: Record<string, string> = {}): Promise<TestServer> {
  const started = await startTestServer({}, { ...FAST, ...env });
  servers.push(started);
  return started;
}

async function stream(base: string, path = '', headers: Record<string, string> = {}) {
  const opened = await openEventStream(`${base}/api/microblog/events${path}`, headers);
  streams.push(opened);
  return opened;
}

afterEach(async () => {
  for (const s of streams.splice(0)) s.close();
  for (const s of servers.splice(0)) await s.close();
});

async function writePost(base: string, content: string, quest_topic = 'online_safety'): Promise<Post> {
  const response = await fetch(`${base}/api/microblog`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ content, quest_topic, student_name: 'Ada' }),
  });
  expect(response.status).toBe(201);
  return (await response.json()) as Post;
}

async function writeReply(base: string, post_id: number, content: string): Promise<Reply> {
  const response = await fetch(`${base}/api/microblog/reply`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ post_id, content }),
  });
  expect(response.status).toBe(201);
  return (await response.json()) as Reply;
}

async function react(base: string, post_id: number, reaction_type = 'like'): Promise<Post> {
  const response = await fetch(`${base}/api/microblog/reaction`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ post_id, reaction_type }),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as Post;
}

const ids = (messages: SseMessage[]) => messages.map((m) => Number(m.id));
const kinds = (messages: SseMessage[]) => messages.map((m) => m.event);
const dataOf = (message: SseMessage) => JSON.parse(message.data) as Record<string, unknown>;

/** Strictly increasing, so no id twice. */
function expectIncreasing(values: number[]): void {
  for (let i = 1; i < values.length; i++) expect(values[i]).toBeGreaterThan(values[i - 1]);
}

/** A second instance of the service on the same database (its own pool, listener and hub). */
async function secondInstance(
  first: TestServer,
): Promise<{ app: FastifyInstance; baseUrl: string; close(): Promise<void> }> {
  const database = await openDatabase<MicroblogDatabase>(first.config.database);
  const app = await buildApp(first.config, { database });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('no address');
  return {
    app,
    baseUrl: `http://127.0.0.1:${address.port}`,
    async close() {
      await app.close();
      await database.close();
    },
  };
}

describe('GET /api/microblog/events', () => {
  test('opens with a retry hint, sends a heartbeat, and a post, a reply and a reaction as they happen', async () => {
    const { baseUrl } = await server();
    const live = await stream(baseUrl);
    expect(live.status).toBe(200);
    expect(live.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(live.headers['cache-control']).toMatch(/no-cache/);
    expect(live.headers['x-request-id']).toBeTruthy();
    expect(live.headers['x-content-type-options']).toBe('nosniff');
    await live.until((s) => s.blocks.some((b) => b.retry === 250), 2000, 'the retry hint');
    await live.until((s) => s.blocks.some((b) => b.comment !== undefined), 2000, 'a heartbeat');

    const post = await writePost(baseUrl, 'live post');
    const reply = await writeReply(baseUrl, post.id, 'live reply');
    const reacted = await react(baseUrl, post.id, 'celebrate');
    const messages = await live.messagesUntil(3);
    expect(kinds(messages)).toEqual(['post', 'reply', 'reaction']);
    expectIncreasing(ids(messages));

    // The post: the very JSON of its list item.
    const listed = await (await fetch(`${baseUrl}/api/microblog`)).text();
    const item = JSON.stringify((JSON.parse(listed) as Post[]).find((p) => p.id === post.id));
    expect(listed).toContain(item);
    expect(messages[0].data).toBe(JSON.stringify({ ...post, reply_count: 0, replies: [] }));
    expect(JSON.parse(messages[0].data)).toEqual(post);
    expect(dataOf(messages[1])).toEqual({ reply, reply_count: 1, quest_topic: 'online_safety' });
    expect(dataOf(messages[2])).toEqual({
      post_id: post.id,
      reactions: reacted.reactions,
      quest_topic: 'online_safety',
    });
    expect(reacted.reactions.celebrate).toBe(1);
  });

  test('the topic filter sends only the events of that topic’s posts', async () => {
    const { baseUrl } = await server();
    const safety = await stream(baseUrl, '?topic=online_safety');
    const all = await stream(baseUrl);
    const ethics = await writePost(baseUrl, 'ethics', 'digital_ethics');
    const safe = await writePost(baseUrl, 'safety', 'online_safety');
    await writeReply(baseUrl, ethics.id, 'to ethics');
    await react(baseUrl, ethics.id);
    await writeReply(baseUrl, safe.id, 'to safety');
    await react(baseUrl, safe.id);
    await all.messagesUntil(6);
    const filtered = await safety.messagesUntil(3);
    expect(kinds(filtered)).toEqual(['post', 'reply', 'reaction']);
    for (const m of filtered) expect(dataOf(m).quest_topic).toBe('online_safety');
    await new Promise((r) => setTimeout(r, 200));
    expect(safety.messages).toHaveLength(3);

    const bad = await fetch(`${baseUrl}/api/microblog/events?topic=nope`);
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  });

  test.each([
    ['the Last-Event-ID header', (id: number) => ['', { 'last-event-id': String(id) }] as const],
    ['the last_event_id query parameter', (id: number) => [`?last_event_id=${id}`, {}] as const],
  ])('replays every event after %s in order, then follows live, none twice', async (_how, resume) => {
    const { baseUrl } = await server();
    const first = await stream(baseUrl);
    for (let i = 0; i < 6; i++) await writePost(baseUrl, `before ${i}`);
    const seen = await first.messagesUntil(6);
    first.close();
    const from = Number(seen[1].id);

    const [path, headers] = resume(from);
    const resumed = await stream(baseUrl, path, headers);
    const replayed = await resumed.messagesUntil(4);
    expect(ids(replayed)).toEqual(ids(seen).slice(2));
    const after = await writePost(baseUrl, 'after');
    const all = await resumed.messagesUntil(5);
    expect(JSON.parse(all[4].data)).toMatchObject({ id: after.id });
    await new Promise((r) => setTimeout(r, 200));
    expect(resumed.messages).toHaveLength(5);
    expectIncreasing(ids(resumed.messages));
  });

  test('a replay racing live writes ends with every event once, in order', async () => {
    const { baseUrl, database } = await server();
    const watcher = await stream(baseUrl);
    await writePost(baseUrl, 'start');
    const [start] = await watcher.messagesUntil(1);
    let writing = true;
    const writes = (async () => {
      for (let i = 0; writing; i++) await writePost(baseUrl, `race ${i}`);
    })();
    const resumers: EventStreamClient[] = [];
    for (let i = 0; i < 5; i++) {
      resumers.push(await stream(baseUrl, '', { 'last-event-id': start.id! }));
      await new Promise((r) => setTimeout(r, 30));
    }
    await new Promise((r) => setTimeout(r, 200));
    writing = false;
    await writes;
    const logged = (
      await sql<{ id: string }>`select id from events where id > ${start.id} order by id`.execute(database.db)
    ).rows.map((r) => Number(r.id));
    for (const resumer of resumers) {
      await resumer.messagesUntil(logged.length);
      expect(ids(resumer.messages)).toEqual(logged);
    }
  });

  test('an id older than the retained log gets one reset (with the newest id), then live events', async () => {
    const a = await server({ EVENTS_KEEP_MAX: '2' });
    const first = await stream(a.baseUrl);
    for (let i = 0; i < 5; i++) await writePost(a.baseUrl, `old ${i}`);
    const seen = await first.messagesUntil(5);
    first.close();
    expect(await a.app.eventStream.prune()).toEqual({ deleted: 3 });

    // Another instance (this one still holds the recent events in memory, and would replay them).
    const b = await secondInstance(a);
    try {
      await resetsAndReplays(b.baseUrl, seen);
    } finally {
      await b.close();
    }
  });

  async function resetsAndReplays(baseUrl: string, seen: SseMessage[]) {
    const stale = await stream(baseUrl, '', { 'last-event-id': seen[0].id! });
    const [reset] = await stale.messagesUntil(1);
    expect(reset.event).toBe('reset');
    expect(reset.id).toBe(seen[4].id);
    expect(dataOf(reset)).toEqual({ reason: 'pruned' });
    const next = await writePost(baseUrl, 'after the reset');
    const messages = await stale.messagesUntil(2);
    expect(kinds(messages)).toEqual(['reset', 'post']);
    expect(dataOf(messages[1]).id).toBe(next.id);

    // Still within the log: replayed, no reset.
    const recent = await stream(baseUrl, '', { 'last-event-id': seen[3].id! });
    expect(kinds(await recent.messagesUntil(2))).toEqual(['post', 'post']);
    // An id the log never had: reset too.
    const unknown = await stream(baseUrl, '', { 'last-event-id': '999999999' });
    const [unknownReset] = await unknown.messagesUntil(1);
    expect([unknownReset.event, dataOf(unknownReset).reason]).toEqual(['reset', 'unknown']);
  }

  test('two instances on one database: a subscriber on A gets a write made through B, and B replays from its table', async () => {
    const a = await server();
    const b = await secondInstance(a);
    try {
      const onA = await stream(a.baseUrl);
      const onB = await stream(b.baseUrl);
      const first = await writePost(b.baseUrl, 'through B');
      const second = await writePost(a.baseUrl, 'through A');
      for (const s of [onA, onB]) {
        const messages = await s.messagesUntil(2);
        expect(messages.map((m) => dataOf(m).id)).toEqual([first.id, second.id]);
      }
      // A third instance started after these: it replays from the table, not from memory.
      const c = await secondInstance(a);
      try {
        const resumed = await stream(c.baseUrl, '', { 'last-event-id': '0' });
        expect((await resumed.messagesUntil(2)).map((m) => dataOf(m).id)).toEqual([first.id, second.id]);
      } finally {
        await c.close();
      }
    } finally {
      await b.close();
    }
  });

  test('the listener’s connection killed by the database during writes: no event lost, none twice', async () => {
    const { baseUrl, app, database } = await server();
    const live = await stream(baseUrl);
    const pids: number[] = [];
    let writing = true;
    let written = 0;
    const writes = (async () => {
      for (; writing; written++) await writePost(baseUrl, `during kills ${written}`);
    })();
    for (let kill = 0; kill < 3; kill++) {
      await new Promise((r) => setTimeout(r, 150));
      const pid = app.eventStream.listener.backendPid;
      expect(pid).toBeDefined();
      pids.push(pid!);
      await sql`select pg_terminate_backend(${pid})`.execute(database.db);
      // Reconnected (another backend) before the next kill.
      const deadline = Date.now() + 5000;
      while ([undefined, pid].includes(app.eventStream.listener.backendPid) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 20));
    }
    writing = false;
    await writes;
    expect(new Set(pids).size).toBe(3);
    const messages = await live.messagesUntil(written, 10_000);
    const logged = (await sql<{ id: string }>`select id from events order by id`.execute(database.db)).rows;
    expect(ids(messages)).toEqual(logged.map((r) => Number(r.id)));
    expect(messages).toHaveLength(written);
  });

  test('a client that stops reading is dropped, not buffered without bound; one that reads gets everything', async () => {
    const { baseUrl, app, database } = await server({ EVENTS_SEND_BUFFER_BYTES: String(512 * 1024) });
    const slow = await stream(baseUrl);
    const reader = await stream(baseUrl);
    await slow.until((s) => s.blocks.length > 0, 2000);
    slow.pause();
    expect(app.eventStream.hub.size).toBe(2);
    // 120 events of 100 KB, two a statement: far more than the sockets' buffers and the limit (each a
    // post as the document describes it, its content longer than a client may write).
    for (let i = 0; i < 60; i++) {
      await sql`insert into events (kind, payload)
        select 'post', jsonb_build_object('id', n, 'content', repeat('x', 100000), 'quest_topic', 'online_safety',
          'student_name', 'Ada', 'timestamp', '2026-11-28T00:00:00.000Z', 'replies', '[]'::jsonb, 'reply_count', 0,
          'reactions', ${REACTIONS}::jsonb)
        from generate_series(1, 2) n`.execute(database.db);
      await new Promise((r) => setTimeout(r, 10));
    }
    await reader.messagesUntil(120, 15_000);
    expect(app.eventStream.hub.dropped).toBe(1);
    expect(app.eventStream.hub.size).toBe(1);
    // What reached the slow client before it was cut off: far from everything.
    slow.response.resume();
    await slow.ended;
    expect(slow.text.length).toBeLessThan(60 * 100_000);
  });

  test('over the cap of open streams: 503 in problem details with Retry-After', async () => {
    const { baseUrl } = await server({ EVENTS_MAX_STREAMS: '2' });
    const one = await stream(baseUrl);
    await stream(baseUrl);
    const refused = await fetch(`${baseUrl}/api/microblog/events`);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await refused.json()).toMatchObject({
      type: 'about:blank',
      status: 503,
      title: 'Service Unavailable',
    });
    // A place freed is a place taken.
    one.close();
    await one.ended;
    const deadline = Date.now() + 2000;
    let again = await stream(baseUrl);
    while (again.status !== 200 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      again = await stream(baseUrl);
    }
    expect(again.status).toBe(200);
  });

  test('closing the app (the SIGTERM path) ends every stream with a retry hint', async () => {
    const started = await startTestServer({}, FAST);
    const live = await stream(started.baseUrl);
    await live.until((s) => s.blocks.length > 0, 2000);
    const before = live.blocks.length;
    await started.close();
    await live.ended;
    const last = live.blocks.slice(before).filter((b) => b.retry !== undefined);
    expect(last).toHaveLength(1);
    expect(last[0].retry).toBeGreaterThan(0);
    expect(live.text.endsWith(`retry: ${last[0].retry}\n\n`)).toBe(true);
  });

  test('a class of 30 panels behind one address streams, with the default connection caps', async () => {
    const { baseUrl, config } = await server();
    expect(config.maxConnectionsPerAddress).toBeGreaterThanOrEqual(30 * 6);
    const panels = await Promise.all(Array.from({ length: 30 }, () => stream(baseUrl)));
    expect(panels.map((p) => p.status)).toEqual(Array(30).fill(200));
    const post = await writePost(baseUrl, 'to the whole class');
    for (const panel of panels) expect(dataOf((await panel.messagesUntil(1))[0]).id).toBe(post.id);
    expect((await fetch(`${baseUrl}/api/microblog`)).status).toBe(200);
  });

  test('1,200 streams (more than one slice of the fan-out): every event to every one, once, in id order, as valid chunks', async () => {
    const { baseUrl, app, database } = await server({ MAX_CONNECTIONS_PER_ADDRESS: '0' });
    const many = await Promise.all(Array.from({ length: 1200 }, () => stream(baseUrl)));
    expect(many.every((s) => s.status === 200)).toBe(true);
    await Promise.all(many.map((s) => s.until((c) => c.blocks.some((b) => b.retry !== undefined), 10_000)));
    expect(app.eventStream.hub.size).toBe(1200);
    // Posts one after the other, and a burst of two in one statement (one pass, two events).
    const written = [await writePost(baseUrl, 'first'), await writePost(baseUrl, 'second')];
    await sql`insert into events (kind, payload)
      select 'post', jsonb_build_object('id', 1000000 + n, 'content', 'burst ' || n, 'quest_topic', 'online_safety',
        'student_name', 'Ada', 'timestamp', '2026-11-28T00:00:00.000Z', 'replies', '[]'::jsonb, 'reply_count', 0,
        'reactions', ${REACTIONS}::jsonb)
      from generate_series(1, 2) n`.execute(database.db);
    const expected = [...written.map((p) => p.id), 1000001, 1000002];
    for (const s of many) {
      const got = await s.messagesUntil(4, 10_000);
      expect(got.map((m) => dataOf(m).id)).toEqual(expected);
      expectIncreasing(ids(got));
    }
    // An ordinary read in the middle of it all.
    expect((await fetch(`${baseUrl}/api/microblog`)).status).toBe(200);
  });

  test('is documented: text/event-stream with each event’s schema, and its errors', async () => {
    const { app } = await server();
    const doc = (await app.inject('/docs/json')).json();
    // OpenAPI 3.0: `example` (one value), never JSON Schema's `examples` array, under `anyOf` too.
    expect(JSON.stringify(doc)).not.toMatch(/"examples":\[/);
    const route = doc.paths['/api/microblog/events'].get;
    const stream200 = route.responses['200'].content['text/event-stream'].schema;
    const events = (stream200.anyOf ?? stream200.oneOf).map(
      (m: { properties: { event: { const?: string; enum?: string[] } } }) =>
        m.properties.event.const ?? m.properties.event.enum?.[0],
    );
    expect(events).toEqual(['post', 'reply', 'reaction', 'reset']);
    expect(Object.keys(route.responses)).toEqual(expect.arrayContaining(['200', '400', '500', '503']));
    expect(route.parameters.map((p: { name: string }) => p.name).sort()).toEqual(['last_event_id', 'topic']);
    expect(route.description).toMatch(/EVENTS_MAX_STREAMS/);
  });
});
