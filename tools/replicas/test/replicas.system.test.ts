import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { testDatabase, testDatabaseUrl, type TestDatabase } from '@platform/db/testing';
import { ADDRESS_LIMITS, REPLICA_HEADER } from '../src/haproxy';
import { SHUTDOWN_DRAIN_MS, startReplicas, type ReplicaSet } from '../src/replicas';
import { Clients, type Outcome, type RequestSpec } from './support/client';

// Three replicas of each service behind HAProxy, on one PostgreSQL (fresh schemas of the test
// database) and one Redis (keys under a prefix of this run), started with the same code as
// `npm run replicas`. Limits small enough to reach; argon2 cheap.
const REPLICAS = 3;
const WRITE_RATE_LIMIT = 10;
const LOGIN_FAILURES_PER_ADDRESS = 6;
const LOGIN_FAILURES_PER_ACCOUNT = 3;
const REDIS = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/0';
/** The steady load: its length, when one replica of each service is killed, then one stopped. */
/** How long after `kill()` a request may start and still meet the replica before it acts on the signal. */
const SIGNAL_SLOP_MS = 250;
const LOAD = {
  durationMs: 15_000,
  sigkillAtMs: 4_000,
  sigtermAtMs: 8_000,
  workersPerService: 3,
  pauseMs: 40,
};

const SERVICES = ['microblog-api', 'social-api', 'workspace-api'] as const;
type Service = (typeof SERVICES)[number];

const run = randomBytes(4).toString('hex');
const redisPrefix = `replicas-test-${run}:`;
const redisClientName = `replicas-test-${run}`;
const apiKey = `replicas${run}`;
const apiKeySecret = randomBytes(16).toString('hex');
const workspaceAuth = { 'api-key': apiKey, 'api-key-secret': apiKeySecret };

/** Addresses of this machine the test's clients connect from (see Client). */
const ADDRESS = {
  reader: '127.0.1.1',
  socialWriter: '127.0.1.2',
  workspaceWriter: '127.0.1.3',
  registrations: '127.0.1.4',
  microblogFlooder: '127.0.3.1',
  loginGuesser: '127.0.3.2',
  owner: '127.0.3.3',
  /** Floods the balancer (requests, then connections); the bystander is served meanwhile. */
  balancerFlooder: '127.0.4.1',
  connectionHoarder: '127.0.4.2',
  bystander: '127.0.0.2',
  /** Load writes to microblog rotate over 100 addresses, each well under its write limit. */
  microblogWriter: (n: number) => `127.0.2.${1 + (n % 100)}`,
};

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

async function withRedis<T>(use: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis(REDIS);
  try {
    return await use(redis);
  } finally {
    redis.disconnect();
  }
}

/**
 * Waits until `count` replicas hold a Redis connection of this run: until then a replica skips its
 * limits (as when Redis is down), and a limit test would count on fewer replicas than it thinks.
 */
async function untilReplicasUseRedis(count: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const list = await withRedis((redis) => redis.client('LIST') as Promise<string>);
    const connected = list.split('\n').filter((line) => line.includes(`name=${redisClientName} `)).length;
    if (connected >= count) return;
    if (Date.now() > deadline) throw new Error(`only ${connected} of ${count} replicas connected to Redis`);
    await delay(100);
  }
}

const by = <T>(items: T[], key: (item: T) => string) => {
  const counts: Record<string, number> = {};
  for (const item of items) counts[key(item)] = (counts[key(item)] ?? 0) + 1;
  return counts;
};
const replicasOf = (outcomes: Outcome[]) => new Set(outcomes.map((o) => o.replica));
const failed = (o: Outcome) => o.error !== undefined || (o.status !== undefined && o.status >= 500);

describe(`${REPLICAS} replicas of each service behind HAProxy`, () => {
  let set: ReplicaSet;
  const schemas = {} as Record<Service, TestDatabase>;
  const clients = new Clients();
  const logTail: string[] = [];
  const summary: string[] = [];

  beforeAll(async () => {
    for (const service of SERVICES) schemas[service] = testDatabase(service.replace('-api', ''));
    set = await startReplicas({
      services: [...SERVICES],
      replicas: REPLICAS,
      databaseUrl: testDatabaseUrl(),
      redisUrl: `${REDIS}?keyPrefix=${redisPrefix}&connectionName=${redisClientName}`,
      env: { LOG_LEVEL: 'warn' },
      serviceEnv: {
        'microblog-api': {
          DB_SCHEMA: schemas['microblog-api'].config.schema,
          WRITE_LIMIT_WITHOUT_CLIENT_ID: String(WRITE_RATE_LIMIT),
        },
        'social-api': {
          DB_SCHEMA: schemas['social-api'].config.schema,
          LOGIN_FAILURES_PER_ADDRESS: String(LOGIN_FAILURES_PER_ADDRESS),
          LOGIN_FAILURES_PER_ACCOUNT: String(LOGIN_FAILURES_PER_ACCOUNT),
          ARGON2_MEMORY_KIB: '64',
          ARGON2_TIME_COST: '1',
        },
        'workspace-api': {
          DB_SCHEMA: schemas['workspace-api'].config.schema,
          BOOTSTRAP_API_KEY: apiKey,
          BOOTSTRAP_API_KEY_SECRET: apiKeySecret,
          ARGON2_MEMORY_KIB: '64',
          ARGON2_TIME_COST: '1',
        },
      },
      onOutput: (source, line) => {
        logTail.push(`${source} │ ${line}`);
        if (logTail.length > 200) logTail.shift();
      },
    });
    await untilReplicasUseRedis(SERVICES.length * REPLICAS);
  }, 120_000);

  afterAll(async () => {
    clients.closeAll();
    await set?.stop();
    await Promise.all(Object.values(schemas).map((schema) => schema.cleanup()));
    await withRedis(async (redis) => {
      const keys: string[] = [];
      for await (const batch of redis.scanStream({ match: `${redisPrefix}*`, count: 500 })) {
        keys.push(...(batch as string[]));
      }
      if (keys.length) await redis.del(...keys);
    });
    if (logTail.length) summary.push('last lines the replicas and HAProxy wrote:', ...logTail.slice(-30));
    if (summary.length) process.stdout.write(`\n${summary.join('\n')}\n\n`);
  }, 60_000);

  /** One request through the balancer of `service`. */
  const send = (address: string, spec: Omit<RequestSpec, 'baseUrl'> & { service: Service }) =>
    clients.get(address).send({ ...spec, baseUrl: set.service(spec.service).url });

  const postNote = (address: string, n: number) =>
    send(address, {
      service: 'microblog-api',
      kind: 'write',
      method: 'POST',
      path: '/api/microblog',
      body: { content: `note ${run} ${n}`, quest_topic: 'online_safety', student_name: 'replica test' },
    });

  const register = async (username: string, password: string) => {
    const created = await send(ADDRESS.registrations, {
      service: 'social-api',
      kind: 'register',
      method: 'POST',
      path: '/api/users',
      body: { username, email: `${username}@example.com`, password },
    });
    expect(created.status).toBe(201);
  };

  const login = (address: string, username: string, password: string) =>
    send(address, {
      service: 'social-api',
      kind: 'login',
      method: 'POST',
      path: '/api/tokens',
      headers: { authorization: basic(username, password) },
    });

  test('the balancer spreads requests over every replica of each service, all healthy', async () => {
    for (const service of SERVICES) {
      const outcomes = [];
      for (let i = 0; i < 2 * REPLICAS; i++) {
        outcomes.push(await send(ADDRESS.reader, { service, kind: 'ready', method: 'GET', path: '/readyz' }));
      }
      expect(outcomes.map((o) => o.status)).toEqual(Array(2 * REPLICAS).fill(200));
      expect([...replicasOf(outcomes)].sort()).toEqual(['r1', 'r2', 'r3']);
    }
    const stats = await set.stats();
    expect(stats).toHaveLength(SERVICES.length * REPLICAS);
    expect(stats.every((s) => s.status === 'UP')).toBe(true);
  });

  test('the microblog write limit holds across replicas: the write past it is refused whichever replica gets it', async () => {
    const outcomes = [];
    for (let n = 0; n < WRITE_RATE_LIMIT + REPLICAS; n++)
      outcomes.push(await postNote(ADDRESS.microblogFlooder, n));
    const accepted = outcomes.slice(0, WRITE_RATE_LIMIT);
    const refused = outcomes.slice(WRITE_RATE_LIMIT);
    expect(accepted.map((o) => o.status)).toEqual(Array(WRITE_RATE_LIMIT).fill(201));
    expect(refused.map((o) => o.status)).toEqual(Array(REPLICAS).fill(429));
    // Round robin: every replica accepted some of the budget, and every replica refused past it.
    expect(replicasOf(accepted).size).toBe(REPLICAS);
    expect(replicasOf(refused).size).toBe(REPLICAS);
    expect(refused.every((o) => /^\d+$/.test(String(o.headers?.['retry-after'])))).toBe(true);

    // The limit is the client's (its address through X-Forwarded-For), not the balancer's: another
    // client still writes, and a forged X-Forwarded-For does not buy the flooder a fresh budget.
    expect((await postNote(ADDRESS.owner, 0)).status).toBe(201);
    const forged = await clients.get(ADDRESS.microblogFlooder).send({
      service: 'microblog-api',
      kind: 'write',
      method: 'POST',
      baseUrl: set.service('microblog-api').url,
      path: '/api/microblog',
      headers: { 'x-forwarded-for': '203.0.113.9' },
      body: { content: 'forged', quest_topic: 'online_safety', student_name: 'replica test' },
    });
    expect(forged.status).toBe(429);
    summary.push(
      `write limit: ${WRITE_RATE_LIMIT} writes accepted by ${[...replicasOf(accepted)].sort().join(',')}, ` +
        `the next ${REPLICAS} refused (429) by ${[...replicasOf(refused)].sort().join(',')}`,
    );
  });

  test('the social login failure limits hold across replicas, per account and per address', async () => {
    const password = 'right-password';
    const [ann, bob, cat] = ['ann', 'bob', 'cat'].map((name) => `${name}${run}`);
    for (const username of [ann, bob, cat]) await register(username, password);

    // ann: LOGIN_FAILURES_PER_ACCOUNT wrong passwords, then refused even with the right one.
    const annFailures = [];
    for (let i = 0; i < LOGIN_FAILURES_PER_ACCOUNT; i++)
      annFailures.push(await login(ADDRESS.loginGuesser, ann, 'wrong'));
    const annRefused = await login(ADDRESS.loginGuesser, ann, password);
    // bob: the address's remaining failures, then the address is refused for any account.
    const bobFailures = [];
    for (let i = LOGIN_FAILURES_PER_ACCOUNT; i < LOGIN_FAILURES_PER_ADDRESS; i++) {
      bobFailures.push(await login(ADDRESS.loginGuesser, bob, 'wrong'));
    }
    const catRefused = await login(ADDRESS.loginGuesser, cat, password);
    const bobRefused = await login(ADDRESS.loginGuesser, bob, 'wrong');

    const failures = [...annFailures, ...bobFailures];
    expect(failures.map((o) => o.status)).toEqual(Array(LOGIN_FAILURES_PER_ADDRESS).fill(401));
    expect(replicasOf(failures).size).toBe(REPLICAS);
    const refusals = [annRefused, catRefused, bobRefused];
    expect(refusals.map((o) => o.status)).toEqual([429, 429, 429]);
    expect(replicasOf(refusals).size).toBeGreaterThan(1);
    // The owner, from elsewhere, is not locked out.
    expect((await login(ADDRESS.owner, ann, password)).status).toBe(200);
    summary.push(
      `login limits: ${failures.length} failures (401) over ${[...replicasOf(failures)].sort().join(',')}, ` +
        `then 429 for the account and the address from ${[...replicasOf(refusals)].sort().join(',')}; the owner elsewhere logs in`,
    );
  });

  /** The load's requests on each service: one write (its acknowledged id kept), one read. */
  function workloads(tokens: string[], acked: Record<Service, (number | string)[]>) {
    let sequence = 0;
    const bearer = (worker: number) => ({ authorization: `Bearer ${tokens[worker]}` });
    const keep =
      (service: Service, id: (body: never) => number | string, okStatus: number) => (o: Outcome) => {
        if (o.status === okStatus) acked[service].push(id(o.body as never));
        return o;
      };
    const workload: Record<
      Service,
      { write(worker: number): Promise<Outcome>; read(worker: number): Promise<Outcome> }
    > = {
      'microblog-api': {
        write: () => {
          const n = sequence++;
          return postNote(ADDRESS.microblogWriter(n), n).then(
            keep('microblog-api', (b: { id: number }) => b.id, 201),
          );
        },
        read: () =>
          send(ADDRESS.reader, {
            service: 'microblog-api',
            kind: 'read',
            method: 'GET',
            path: '/api/microblog?limit=20',
          }),
      },
      'social-api': {
        write: (worker) =>
          send(ADDRESS.socialWriter, {
            service: 'social-api',
            kind: 'write',
            method: 'POST',
            path: '/api/posts',
            headers: bearer(worker),
            body: { text: `post ${run} ${sequence++}` },
          }).then(keep('social-api', (b: { id: number }) => b.id, 201)),
        read: (worker) =>
          send(ADDRESS.reader, {
            service: 'social-api',
            kind: 'read',
            method: 'GET',
            path: '/api/feed?limit=10',
            headers: bearer(worker),
          }),
      },
      'workspace-api': {
        write: () =>
          send(ADDRESS.workspaceWriter, {
            service: 'workspace-api',
            kind: 'write',
            method: 'POST',
            path: '/api/public/create_user',
            headers: workspaceAuth,
            body: { target_user: { username: `load-${run}-${sequence++}` } },
          }).then(keep('workspace-api', (b: { user: { user_id: string } }) => b.user.user_id, 200)),
        read: () =>
          send(ADDRESS.reader, {
            service: 'workspace-api',
            kind: 'read',
            method: 'GET',
            path: '/api/public/validate_credentials',
            headers: workspaceAuth,
          }),
      },
    };
    return { workload, bearer };
  }

  /** The acknowledged writes that cannot be read back through the balancer, by service. */
  async function unreadable(acked: Record<Service, (number | string)[]>, bearer: Record<string, string>) {
    const microblogIds = new Set<number | string>();
    for (let path: string | undefined = '/api/microblog?limit=500'; path;) {
      const page = await send(ADDRESS.reader, {
        service: 'microblog-api',
        kind: 'check',
        method: 'GET',
        path,
      });
      expect(page.status).toBe(200);
      for (const post of page.body as { id: number }[]) microblogIds.add(post.id);
      path = /<([^>]+)>;\s*rel="next"/.exec(String(page.headers?.link ?? ''))?.[1];
    }
    const socialMissing: (number | string)[] = [];
    for (const id of acked['social-api']) {
      const path = `/api/posts/${id}`;
      const post = await send(ADDRESS.reader, {
        service: 'social-api',
        kind: 'check',
        method: 'GET',
        path,
        headers: bearer,
      });
      if (post.status !== 200) socialMissing.push(id);
    }
    const users = await send(ADDRESS.reader, {
      service: 'workspace-api',
      kind: 'check',
      method: 'POST',
      path: '/api/public/get_users',
      headers: workspaceAuth,
      body: {},
    });
    expect(users.status).toBe(200);
    const userIds = new Set<number | string>(
      (users.body as { users: { user_id: string }[] }).users.map((u) => u.user_id),
    );
    return {
      'microblog-api': acked['microblog-api'].filter((id) => !microblogIds.has(id)),
      'social-api': socialMissing,
      'workspace-api': acked['workspace-api'].filter((id) => !userIds.has(id)),
    };
  }

  // HAProxy's own per-address limits, at their shipped defaults (ADDRESS_LIMITS): the flood is
  // answered by the balancer (no replica header), and another address is served all along.
  test('a one-address flood meets HAProxy: 429 with Retry-After and a JSON body past the request rate, connections past the cap refused; another address is served', async () => {
    const service = 'microblog-api' as const;
    const health = { service, kind: 'flood', method: 'GET', path: '/healthz' } as const;
    const flood: Outcome[] = [];
    let stopped = false;
    const deadline = Date.now() + 60_000;
    // 32 clients that never pause, all from one address, until the balancer refuses them.
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (!stopped && Date.now() < deadline) {
          const outcome = await send(ADDRESS.balancerFlooder, health);
          flood.push(outcome);
          if (outcome.status === 429) stopped = true;
        }
      }),
    );
    const served = flood.filter((o) => o.status === 200);
    const throttled = flood.filter((o) => o.status === 429);
    summary.push(
      `  balancer flood: ${served.length} served, then 429 after ${flood.at(-1)!.end - flood[0].start} ms`,
    );
    expect(throttled.length).toBeGreaterThan(0);
    expect(flood.filter(failed)).toEqual([]);
    // The whole budget of the window was served first (a classroom's worth), by the replicas.
    expect(served.length).toBeGreaterThanOrEqual(ADDRESS_LIMITS.requests * 0.95);
    expect(served.every((o) => o.replica)).toBe(true);
    // The refusal is HAProxy's own: no replica saw it.
    for (const refused of throttled) {
      expect(refused.headers?.[REPLICA_HEADER]).toBeUndefined();
      expect(refused.headers?.['content-type']).toBe('application/json');
      expect(refused.headers?.['retry-after']).toBe(String(ADDRESS_LIMITS.windowSeconds));
      expect(refused.body).toMatchObject({ statusCode: 429, error: 'Too Many Requests' });
    }
    // Still refused while it keeps going; another address (127.0.0.2) is served at once.
    expect((await send(ADDRESS.balancerFlooder, health)).status).toBe(429);
    const bystander = await send(ADDRESS.bystander, health);
    expect(bystander.status).toBe(200);
    expect(bystander.replica).toBeDefined();

    // Connections: one address opens more than the cap; those past it are closed by HAProxy before
    // any request, while the bystander connects and is served.
    const { port } = new URL(set.service(service).url);
    const sockets: { socket: Socket; closed: boolean }[] = [];
    try {
      await Promise.all(
        Array.from(
          { length: ADDRESS_LIMITS.connections + 20 },
          () =>
            new Promise<void>((resolve) => {
              const entry = {
                socket: connect({
                  host: '127.0.0.1',
                  port: Number(port),
                  localAddress: ADDRESS.connectionHoarder,
                }),
                closed: false,
              };
              sockets.push(entry);
              entry.socket.on('connect', () => resolve());
              entry.socket.on('error', () => resolve());
              entry.socket.on('close', () => {
                entry.closed = true;
                resolve();
              });
            }),
        ),
      );
      const settled = Date.now() + 5_000;
      while (sockets.filter((s) => s.closed).length < 20 && Date.now() < settled) await delay(50);
      expect(sockets.filter((s) => !s.closed)).toHaveLength(ADDRESS_LIMITS.connections);
      const served = await send(ADDRESS.bystander, health);
      expect(served.status).toBe(200);
    } finally {
      for (const { socket } of sockets) socket.destroy();
    }
  }, 90_000);

  test('steady mixed load through a SIGKILL and a SIGTERM: only writes in flight at the kill fail, nothing acknowledged is lost', async () => {
    // Social users and their tokens, one per load worker.
    const tokens: string[] = [];
    for (let i = 0; i < LOAD.workersPerService; i++) {
      const username = `load${i}${run}`;
      await register(username, 'load-password');
      const loggedIn = await login(ADDRESS.registrations, username, 'load-password');
      expect(loggedIn.status).toBe(200);
      tokens.push((loggedIn.body as { access_token: string }).access_token);
    }
    const acked: Record<Service, (number | string)[]> = {
      'microblog-api': [],
      'social-api': [],
      'workspace-api': [],
    };
    const { workload, bearer } = workloads(tokens, acked);

    // Workers per service, each writing once and reading twice, over and over, until the end.
    const outcomes: Outcome[] = [];
    let running = true;
    const start = Date.now();
    const workers = SERVICES.flatMap((service) =>
      Array.from({ length: LOAD.workersPerService }, async (_, worker) => {
        for (let step = 0; running; step++) {
          const w = workload[service];
          outcomes.push(await (step % 3 === 0 ? w.write(worker) : w.read(worker)));
          await delay(LOAD.pauseMs);
        }
      }),
    );
    // Meanwhile r1 of each service dies (SIGKILL), then r2 is stopped (SIGTERM).
    const killedAt = {} as Record<string, number>;
    const stoppedAt = {} as Record<string, number>;
    await delay(LOAD.sigkillAtMs);
    for (const service of SERVICES) {
      killedAt[service] = Date.now();
      set.service(service).replicas[0].process.kill('SIGKILL');
    }
    await delay(LOAD.sigtermAtMs - LOAD.sigkillAtMs);
    for (const service of SERVICES) {
      stoppedAt[service] = Date.now();
      set.service(service).replicas[1].process.kill('SIGTERM');
    }
    await delay(LOAD.durationMs - LOAD.sigtermAtMs);
    running = false;
    await Promise.all(workers);
    const elapsedMs = Date.now() - start;
    const graceful = await Promise.all(SERVICES.map((service) => set.service(service).replicas[1].exited));
    const stats = await set.stats();
    const lost = await unreadable(acked, bearer(0));

    const failures = outcomes.filter(failed);
    // In flight when a replica of its service got the signal (the replica acts on it a moment later).
    const inFlightAt = (o: Outcome, at: Record<string, number>) =>
      o.start <= at[o.service] + SIGNAL_SLOP_MS && o.end >= at[o.service];
    const inFlightAtKill = (o: Outcome) => inFlightAt(o, killedAt);
    const inFlightAtStop = (o: Outcome) => inFlightAt(o, stoppedAt);
    summary.push(
      `steady load: ${outcomes.length} requests in ${(elapsedMs / 1000).toFixed(1)} s, ${LOAD.workersPerService} workers per service; ` +
        `r1 of each service SIGKILLed at ${LOAD.sigkillAtMs / 1000} s, r2 SIGTERMed at ${LOAD.sigtermAtMs / 1000} s`,
    );
    for (const service of SERVICES) {
      const mine = outcomes.filter((o) => o.service === service);
      const theirs = failures.filter((o) => o.service === service);
      const writes = mine.filter((o) => o.kind === 'write').length;
      summary.push(
        `  ${service.padEnd(14)} ${mine.length} requests (${writes} writes, ${acked[service].length} acknowledged, ` +
          `${lost[service].length} lost); per replica ${JSON.stringify(by(mine, (o) => o.replica ?? 'none'))}; ` +
          `failed ${theirs.length} ${JSON.stringify(by(theirs, (o) => `${o.method} ${o.kind}: ${o.error ?? o.status}`))}` +
          ` (in flight at the SIGKILL: ${theirs.filter(inFlightAtKill).length}, at the SIGTERM: ${theirs.filter(inFlightAtStop).length});` +
          ` 429s ${mine.filter((o) => o.status === 429).length}`,
      );
    }
    summary.push(
      `  HAProxy: ${stats.map((s) => `${s.service}/${s.replica} ${s.status} ${s.requests} requests, ${s.retries} retried, ${s.redispatches} redispatched`).join('; ')}`,
      `  failed requests (start relative to the SIGKILL / SIGTERM of their service, duration): ${
        failures
          .map(
            (o) =>
              `${o.service} ${o.method} ${o.error ?? o.status} ${o.start - killedAt[o.service]} / ${o.start - stoppedAt[o.service]} ms, ${o.end - o.start} ms`,
          )
          .join('; ') || 'none'
      }`,
      `  SIGTERMed replicas exited with code ${graceful.map((e) => e.signal ?? e.code).join(', ')}`,
    );

    // Every replica served its share while it lived, and none served after it was gone.
    for (const service of SERVICES) {
      const mine = outcomes.filter((o) => o.service === service);
      expect(replicasOf(mine.filter((o) => o.replica))).toEqual(new Set(['r1', 'r2', 'r3']));
      expect(mine.filter((o) => o.replica === 'r1' && o.start > killedAt[service])).toEqual([]);
      // (A stopped replica serves on, not ready, for its drain period until HAProxy has taken it out.)
      expect(
        mine.filter((o) => o.replica === 'r2' && o.start > stoppedAt[service] + SHUTDOWN_DRAIN_MS + 500),
      ).toEqual([]);
    }
    // HAProxy took both out; the survivor serves.
    expect(stats.map((s) => `${s.service}/${s.replica} ${s.status}`).sort()).toEqual(
      SERVICES.flatMap((service) => [`${service}/r1 DOWN`, `${service}/r2 DOWN`, `${service}/r3 UP`]),
    );
    expect(graceful.map((e) => e.code)).toEqual([0, 0, 0]);
    // The only failures: POSTs in flight when a replica was SIGKILLed (HAProxy must not replay
    // those, they may have been applied). A SIGTERMed replica fails nothing: it serves on, not ready,
    // until HAProxy has taken it out (SHUTDOWN_DRAIN_MS), then closes. Everything else was retried,
    // redispatched or served.
    expect(failures.filter((o) => !(o.method === 'POST' && inFlightAtKill(o)))).toEqual([]);
    expect(failures.filter(inFlightAtStop)).toEqual([]);
    expect(failures.length).toBeLessThanOrEqual(SERVICES.length * LOAD.workersPerService);
    expect(outcomes.filter((o) => !failed(o) && (o.status! < 200 || o.status! >= 300))).toEqual([]);
    expect(lost).toEqual({ 'microblog-api': [], 'social-api': [], 'workspace-api': [] });
  }, 90_000);
});
