import { Type } from '@sinclair/typebox';
import { parseEnv } from '@platform/schema';
import type { Database } from '@platform/db';
import { freePort } from '@platform/db/testing';
import { serviceConfig, serviceEnv, type ServiceConfig } from '../src';
import {
  buildTestApp,
  deleteTestRedisKeys,
  testRedisKeyPrefix,
  testRedisKeys,
  testRedisUrl,
  type TestApp,
} from '@platform/testing';
import { problemDialect } from './support/dialect';
import { smallServiceApp } from './support/platform';

/** Requests each client address may make to `POST /notes` per minute. */
const LIMIT = 4;
/** The client address of the requests, unless a test says otherwise. */
const CLIENT = '192.0.2.7';

const { dialect } = problemDialect('LimitsProblem');

const EnvSchema = Type.Object(serviceEnv({ port: 0, schema: 'limits' }));
const loadConfig = (env: Record<string, string>): ServiceConfig => serviceConfig(parseEnv(EnvSchema, env));

/** A tiny service on `createServiceApp`, as production builds one, with one rate-limited route. */
async function buildApp(config: ServiceConfig, deps: { database?: Database<unknown> }) {
  const app = await smallServiceApp({
    config,
    dialect,
    title: 'limits-test',
    description: 'rate-limit store test',
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

/** `POST /notes` from the client address `from`: the answer. */
function sendNote(app: LimitsApp, from = CLIENT) {
  return app.app.inject({ method: 'POST', url: '/notes', payload: { text: 'x' }, remoteAddress: from });
}

/** `POST /notes` from the client address; the status it got. */
async function postNote(app: LimitsApp): Promise<number> {
  return (await sendNote(app)).statusCode;
}

/** Sends `count` notes, alternating between the instances; the statuses in order. */
async function alternate(apps: LimitsApp[], count: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) statuses.push(await postNote(apps[i % apps.length]));
  return statuses;
}

describe('rate-limit counters of several instances', () => {
  // A key prefix of this run: parallel runs never share a counter, and the clean-up deletes this
  // run's keys only.
  const prefix = testRedisKeyPrefix('limits-test');
  const redisUrl = testRedisUrl(prefix);
  const apps: LimitsApp[] = [];
  const open = async (env: Record<string, string>) => {
    const app = await startApp(env);
    apps.push(app);
    return app;
  };

  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });
  afterAll(() => deleteTestRedisKeys(`${prefix}*`));

  test('share one limit through Redis: the request past it is refused whichever instance gets it', async () => {
    // Start-up waits for Redis, so the very first requests already count there.
    const both = [await open({ REDIS_URL: redisUrl }), await open({ REDIS_URL: redisUrl })];

    expect(await alternate(both, LIMIT)).toEqual(Array(LIMIT).fill(201));
    // Each instance has counted only half the budget itself; both refuse now.
    expect(await postNote(both[0])).toBe(429);
    const refused = await sendNote(both[1]);
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['content-type']).toMatch(/^application\/vnd\.limits-problem\+json/);
    expect(refused.headers['retry-after']).toMatch(/^\d+$/);
    expect(refused.json()).toMatchObject({ status: 429, title: 'Too Many Requests' });

    // Another address has its own budget.
    const other = await sendNote(both[1], '192.0.2.8');
    expect(other.statusCode).toBe(201);

    // The counters are this run's keys in Redis (the prefix of the URL, then the service's namespace).
    const keys = await testRedisKeys(`${prefix}*`);
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
