import { randomBytes } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { Redis } from 'ioredis';
import { FieldError, parseEnv } from '@platform/schema';
import type { Database } from '@platform/db';
import { freePort } from '@platform/db/testing';
import {
  createServiceApp,
  reasonPhrase,
  serviceConfig,
  serviceEnv,
  type ErrorDialect,
  type ServiceConfig,
} from '../src';
import { buildTestApp, STRICT_REQUEST_RULES, type TestApp } from '@platform/testing';

/** Requests each client address may make to `POST /notes` per minute. */
const LIMIT = 4;
const REDIS = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/0';

const Problem = Type.Object(
  { status: Type.Integer(), title: Type.String(), detail: Type.String() },
  { $id: 'LimitsProblem' },
);
const dialect: ErrorDialect = {
  schemaRef: 'LimitsProblem',
  schemas: [FieldError, Problem],
  contentType: 'application/vnd.limits-problem+json; charset=utf-8',
  body: (p) => ({ status: p.status, title: reasonPhrase(p.status), detail: p.detail }),
};

const EnvSchema = Type.Object(serviceEnv({ port: 0, schema: 'limits' }));
const loadConfig = (env: Record<string, string>): ServiceConfig => serviceConfig(parseEnv(EnvSchema, env));

/** A tiny service on `createServiceApp`, as production builds one, with one rate-limited route. */
async function buildApp(config: ServiceConfig, deps: { database?: Database<unknown> }) {
  const app = await createServiceApp({
    config,
    bodyLimit: 1024,
    dialect,
    requestRules: STRICT_REQUEST_RULES,
    docs: { title: 'limits-test', description: 'rate-limit store test', version: '0', tags: [] },
    cors: { origins: '*' },
    migrations: {},
    database: deps.database,
  });
  app.post(
    '/notes',
    { onRequest: app.rateLimit({ max: LIMIT, timeWindow: 60_000 }) },
    async (_request, reply) => reply.status(201).send({ saved: true }),
  );
  return app;
}

type LimitsApp = TestApp<ServiceConfig, unknown>;

function startApp(env: Record<string, string>): Promise<LimitsApp> {
  return buildTestApp({ service: 'limits', loadConfig, buildApp, env });
}

/** `POST /notes` from one client address; the status it got. */
async function postNote(app: LimitsApp): Promise<number> {
  const response = await app.app.inject({
    method: 'POST',
    url: '/notes',
    payload: { text: 'x' },
    remoteAddress: '192.0.2.7',
  });
  return response.statusCode;
}

/** Sends `count` notes, alternating between the instances; the statuses in order. */
async function alternate(apps: LimitsApp[], count: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) statuses.push(await postNote(apps[i % apps.length]));
  return statuses;
}

async function withRedis<T>(use: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis(REDIS);
  try {
    return await use(redis);
  } finally {
    redis.disconnect();
  }
}

/** The keys matching `pattern` (SCAN, so a shared Redis is never blocked). */
function keysOfThisRun(pattern: string): Promise<string[]> {
  return withRedis(async (redis) => {
    const keys: string[] = [];
    for await (const batch of redis.scanStream({ match: pattern, count: 500 }))
      keys.push(...(batch as string[]));
    return keys;
  });
}

describe('rate-limit counters of several instances', () => {
  // A key prefix of this run (ioredis reads `keyPrefix` from the URL): parallel runs never share a
  // counter, and the clean-up deletes this run's keys only.
  const prefix = `limits-test-${randomBytes(5).toString('hex')}:`;
  const redisUrl = `${REDIS}?keyPrefix=${prefix}`;
  const apps: LimitsApp[] = [];
  const open = async (env: Record<string, string>) => {
    const app = await startApp(env);
    apps.push(app);
    return app;
  };

  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });
  afterAll(async () => {
    const keys = await keysOfThisRun(`${prefix}*`);
    if (keys.length) await withRedis((redis) => redis.del(...keys));
  });

  test('share one limit through Redis: the request past it is refused whichever instance gets it', async () => {
    // Start-up waits for Redis, so the very first requests already count there.
    const both = [await open({ REDIS_URL: redisUrl }), await open({ REDIS_URL: redisUrl })];

    expect(await alternate(both, LIMIT)).toEqual(Array(LIMIT).fill(201));
    // Each instance has counted only half the budget itself; both refuse now.
    expect(await postNote(both[0])).toBe(429);
    const refused = await both[1].app.inject({
      method: 'POST',
      url: '/notes',
      payload: { text: 'x' },
      remoteAddress: '192.0.2.7',
    });
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['content-type']).toMatch(/^application\/vnd\.limits-problem\+json/);
    expect(refused.headers['retry-after']).toMatch(/^\d+$/);
    expect(refused.json()).toMatchObject({ status: 429, title: 'Too Many Requests' });

    // Another address has its own budget.
    const other = await both[1].app.inject({
      method: 'POST',
      url: '/notes',
      payload: { text: 'x' },
      remoteAddress: '192.0.2.8',
    });
    expect(other.statusCode).toBe(201);

    // The counters are this run's keys in Redis (the prefix of the URL, then the service's namespace).
    const keys = await keysOfThisRun(`${prefix}*`);
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.every((key) => key.startsWith(`${prefix}limits-test:rate-limit:`))).toBe(true);
  });

  test('without REDIS_URL each instance counts alone', async () => {
    const both = [await open({}), await open({})];

    // Twice the limit gets through, LIMIT on each instance, before either refuses.
    expect(await alternate(both, 2 * LIMIT)).toEqual(Array(2 * LIMIT).fill(201));
    expect(await alternate(both, 2)).toEqual([429, 429]);
  });

  test('a Redis that cannot be reached skips the limit: requests are served, nothing crashes', async () => {
    const closed = await freePort();
    const app = await open({ REDIS_URL: `redis://127.0.0.1:${closed}/0` });

    const statuses = await alternate([app], LIMIT + 3);
    expect(statuses).toEqual(Array(LIMIT + 3).fill(201));
    expect((await app.app.inject('/healthz')).statusCode).toBe(200);
  });
});
