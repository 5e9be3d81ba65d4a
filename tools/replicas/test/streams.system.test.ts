import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { openDatabase } from '@platform/db';
import { testDatabase, testDatabaseUrl, type TestDatabase } from '@platform/db/testing';
import { startReplicas, type ReplicaSet } from '../src/replicas';
import { Clients, type Outcome } from './support/client';
import { ReconnectingEventSource } from './support/event-source';

// microblog-api's live stream through HAProxy: three replicas, SUBSCRIBERS EventSource-like clients
// (each from its own address) spread over them by the stream backend (leastconn), a steady write load
// through the balancer, one replica SIGKILLed and another SIGTERMed while both hold streams. Every
// subscriber reconnects with Last-Event-ID and must end with every event of the log exactly once, in
// id order. Started with the same code as `npm run replicas`.
const REPLICAS = 3;
const SUBSCRIBERS = 20;
const LOAD = { durationMs: 10_000, writesPerSecond: 20, sigkillAtMs: 3_000, sigtermAtMs: 6_000 };
/** How long the subscribers may take to catch up after the last write. */
const CATCH_UP_MS = 20_000;
const REDIS = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/0';

const run = randomBytes(4).toString('hex');
const redisPrefix = `replicas-streams-test-${run}:`;
const subscriberAddress = (n: number) => `127.0.5.${n + 1}`;
/** The writes rotate over addresses of their own, as a class of students would write. */
const writerAddress = (n: number) => `127.0.6.${1 + (n % 50)}`;

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await delay(50);
  }
}

const count = <T>(items: T[], key: (item: T) => string) => {
  const counts: Record<string, number> = {};
  for (const item of items) counts[key(item)] = (counts[key(item)] ?? 0) + 1;
  return counts;
};

interface EventsTable {
  events: { id: string; kind: string; payload: { id?: number; post_id?: number } };
}

describe(`microblog-api's event stream through HAProxy, ${REPLICAS} replicas`, () => {
  let set: ReplicaSet;
  let schema: TestDatabase;
  const clients = new Clients();
  const subscribers: ReconnectingEventSource[] = [];
  const logTail: string[] = [];
  const summary: string[] = [];

  beforeAll(async () => {
    schema = testDatabase('microblog');
    set = await startReplicas({
      services: ['microblog-api'],
      replicas: REPLICAS,
      databaseUrl: testDatabaseUrl(),
      redisUrl: `${REDIS}?keyPrefix=${redisPrefix}`,
      env: { LOG_LEVEL: 'warn' },
      serviceEnv: {
        'microblog-api': {
          DB_SCHEMA: schema.config.schema,
          // The load's writes carry no client id: a budget far above them (the limits have a test of their own).
          WRITE_LIMIT_WITHOUT_CLIENT_ID: '100000',
          // A short reconnection hint and heartbeat, so the test waits less (the defaults are 2 s and 15 s).
          EVENTS_RETRY_MS: '250',
          EVENTS_HEARTBEAT_MS: '1000',
        },
      },
      onOutput: (source, line) => {
        logTail.push(`${source} │ ${line}`);
        if (logTail.length > 200) logTail.shift();
      },
    });
  }, 120_000);

  afterAll(async () => {
    for (const subscriber of subscribers) subscriber.close();
    clients.closeAll();
    await set?.stop();
    await schema?.cleanup();
    const redis = new Redis(REDIS);
    try {
      const keys: string[] = [];
      for await (const batch of redis.scanStream({ match: `${redisPrefix}*`, count: 500 }))
        keys.push(...(batch as string[]));
      if (keys.length) await redis.del(...keys);
    } finally {
      redis.disconnect();
    }
    if (logTail.length) summary.push('last lines the replicas and HAProxy wrote:', ...logTail.slice(-20));
    if (summary.length) process.stdout.write(`\n${summary.join('\n')}\n\n`);
  }, 60_000);

  test('streams spread over the replicas; after a SIGKILL and a SIGTERM every subscriber has every event once, in order', async () => {
    const service = set.service('microblog-api');
    const [killed, stopped] = service.replicas;

    // The subscribers, one after the other as pages open: leastconn gives each the replica holding fewest.
    for (let n = 0; n < SUBSCRIBERS; n++) {
      const subscriber = new ReconnectingEventSource(
        `${service.url}/api/microblog/events`,
        subscriberAddress(n),
      );
      subscribers.push(subscriber);
      subscriber.open();
      await until(() => subscriber.replica !== undefined, 5000, `subscriber ${n} to open its stream`);
    }
    const spread = count(subscribers, (s) => s.replica!);
    const held = await set.streamStats();
    summary.push(
      `${SUBSCRIBERS} subscribers opened through HAProxy: per replica (x-replica) ${JSON.stringify(spread)}; ` +
        `HAProxy's open streams ${held.map((s) => `${s.replica} ${s.open}`).join(', ')}`,
    );
    expect(Object.keys(spread).sort()).toEqual(['r1', 'r2', 'r3']);
    for (const replica of held) expect(replica.open).toBeGreaterThan(0);
    expect(held.reduce((sum, s) => sum + s.open, 0)).toBe(SUBSCRIBERS);
    // leastconn: as even as the count allows.
    expect(Math.max(...Object.values(spread)) - Math.min(...Object.values(spread))).toBeLessThanOrEqual(1);

    // The steady load: posts through the balancer, each at its time (an open loop).
    const writes: Promise<Outcome>[] = [];
    const start = Date.now();
    let killedAt = 0;
    let stoppedAt = 0;
    const total = (LOAD.durationMs / 1000) * LOAD.writesPerSecond;
    for (let n = 0; n < total; n++) {
      const at = start + (n * 1000) / LOAD.writesPerSecond;
      await delay(Math.max(0, at - Date.now()));
      if (!killedAt && Date.now() - start >= LOAD.sigkillAtMs) {
        killedAt = Date.now();
        killed.process.kill('SIGKILL');
      }
      if (!stoppedAt && Date.now() - start >= LOAD.sigtermAtMs) {
        stoppedAt = Date.now();
        stopped.process.kill('SIGTERM');
      }
      writes.push(
        clients.get(writerAddress(n)).send({
          service: 'microblog-api',
          kind: 'write',
          method: 'POST',
          baseUrl: service.url,
          path: '/api/microblog',
          body: { content: `stream ${run} ${n}`, quest_topic: 'online_safety', student_name: 'stream test' },
        }),
      );
    }
    const outcomes = await Promise.all(writes);
    const stoppedExit = await stopped.exited;

    // The log is the truth: every event it holds, in id order (writes in flight at the SIGKILL may
    // or may not have committed; whichever did are events every subscriber must have).
    const database = await openDatabase<EventsTable>({ ...schema.config, poolMax: 1 });
    const rows = await database.db
      .selectFrom('events')
      .select(['id', 'kind', 'payload'])
      .orderBy('id')
      .execute();
    await database.close();
    const logged = rows.map((r) => Number(r.id));
    const newest = String(logged.at(-1));
    await until(
      () => subscribers.every((s) => s.lastEventId === newest),
      CATCH_UP_MS,
      `every subscriber to reach event ${newest}`,
    ).catch(() => undefined); // the counts below say who did not

    const acknowledged = outcomes.filter((o) => o.status === 201).map((o) => (o.body as { id: number }).id);
    const postEvents = new Set(rows.filter((r) => r.kind === 'post').map((r) => r.payload.id));
    const failedWrites = outcomes.filter((o) => o.status !== 201);
    summary.push(
      `load: ${outcomes.length} posts sent at ${LOAD.writesPerSecond}/s through HAProxy, ${acknowledged.length} acknowledged (201), ` +
        `failed ${JSON.stringify(count(failedWrites, (o) => `${o.error ?? o.status}`))}; ${killed.name} SIGKILLed at ${killedAt - start} ms, ` +
        `${stopped.name} SIGTERMed at ${stoppedAt - start} ms (exited ${stoppedExit.signal ?? stoppedExit.code}); ` +
        `events in the log: ${logged.length} (${JSON.stringify(count(rows, (r) => r.kind))}), ids ${logged[0]}..${newest}`,
    );

    const expected = new Set(logged);
    const results = subscribers.map((subscriber, n) => {
      const ids = subscriber.messages.filter((m) => m.event !== 'reset').map((m) => Number(m.id));
      const seen = new Set<number>();
      let duplicates = 0;
      let outOfOrder = 0;
      ids.forEach((id, i) => {
        if (seen.has(id)) duplicates++;
        seen.add(id);
        if (i > 0 && id <= ids[i - 1]) outOfOrder++;
      });
      const gaps = logged.filter((id) => !seen.has(id)).length;
      const unknown = [...seen].filter((id) => !expected.has(id)).length;
      const resets = subscriber.messages.filter((m) => m.event === 'reset').length;
      const replicas = subscriber.connections.filter((c) => c.status === 200).map((c) => c.replica);
      return {
        n,
        received: ids.length,
        duplicates,
        outOfOrder,
        gaps,
        unknown,
        resets,
        connections: subscriber.connections.length,
        refused: subscriber.connections.filter((c) => c.status !== undefined && c.status !== 200).length,
        replicas,
      };
    });
    summary.push(
      'per subscriber: received / duplicates / gaps / out of order, connections (refused), replicas in turn',
      ...results.map(
        (r) =>
          `  #${String(r.n + 1).padStart(2)} ${subscriberAddress(r.n).padEnd(11)} ${r.received}/${logged.length} received, ` +
          `${r.duplicates} duplicates, ${r.gaps} gaps, ${r.outOfOrder} out of order, ${r.resets} resets; ` +
          `${r.connections} connections (${r.refused} refused): ${r.replicas.join(' → ')}`,
      ),
      `totals: events ${logged.length}, received ${results.reduce((s, r) => s + r.received, 0)} ` +
        `(${SUBSCRIBERS} × ${logged.length} = ${SUBSCRIBERS * logged.length} expected), duplicates ${results.reduce((s, r) => s + r.duplicates, 0)}, ` +
        `gaps ${results.reduce((s, r) => s + r.gaps, 0)}, reconnections ${results.reduce((s, r) => s + r.connections - 1, 0)}`,
      `  HAProxy's open streams at the end: ${(await set.streamStats()).map((s) => `${s.replica} ${s.status} ${s.open} open (${s.opened} opened)`).join(', ')}`,
    );

    // Every acknowledged post is in the log (its event written in the statement of the post).
    expect(acknowledged.filter((id) => !postEvents.has(id))).toEqual([]);
    expect(acknowledged.length).toBeGreaterThan(total * 0.9);
    expect(stoppedExit.code).toBe(0);
    // Both replicas went away holding streams: their subscribers moved.
    for (const gone of [killed.name, stopped.name]) {
      const moved = results.filter((r) => r.replicas[0] === gone);
      expect(moved.length).toBeGreaterThan(0);
      for (const r of moved) expect(r.replicas.length).toBeGreaterThan(1);
    }
    // Every subscriber: every event of the log, once, in id order.
    for (const r of results) {
      expect({
        n: r.n,
        received: r.received,
        duplicates: r.duplicates,
        gaps: r.gaps,
        outOfOrder: r.outOfOrder,
      }).toEqual({
        n: r.n,
        received: logged.length,
        duplicates: 0,
        gaps: 0,
        outOfOrder: 0,
      });
      expect(r.unknown).toBe(0);
      expect(r.resets).toBe(0);
      expect(subscribers[r.n].replica).toBe('r3');
    }
  }, 90_000);
});
