/**
 * The write limits across replicas (issue 21): two replicas on one database and one Redis, as
 * `tools/replicas` runs them, accept each other's client ids and count a browser's budget once.
 * A system test: it needs the machine's Redis (127.0.0.1:6379, or TEST_REDIS_URL).
 */
import { buildApp } from '../src/app';
import { loadConfig } from '../src/config';
import { CLIENT_ID_COOKIE } from '../src/plugins/app/client-id';
import { buildTestApp, type TestApp } from './support/app';

const REDIS = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/0';
const BROWSER = /from this browser/;

describe('replicas sharing Redis', () => {
  let first: TestApp | undefined;
  let second: { close(): Promise<void>; inject: TestApp['app']['inject'] } | undefined;
  afterAll(async () => {
    await second?.close();
    await first?.close();
  });

  test("one replica's client id is valid on another, and the browser's budget is counted once for both", async () => {
    const env = {
      REDIS_URL: REDIS,
      WRITE_LIMIT_PER_CLIENT: '4',
      WRITE_LIMIT_PER_ADDRESS: '1000',
      WRITE_LIMIT_WITHOUT_CLIENT_ID: '1000',
    };
    first = await buildTestApp(env);
    // A second replica: the same database (schema) and the same Redis, its own process state.
    const app = await buildApp(loadConfig({ LOG_LEVEL: 'silent', ...env }), { database: first.database });
    await app.ready();
    second = { close: () => app.close(), inject: app.inject.bind(app) };

    const replicas = [first.app, app];
    // A fresh address per run: address counters in the shared Redis outlive this test.
    const remoteAddress = `198.51.100.${1 + Math.floor(Math.random() * 250)}`;
    const panel = await first.app.inject({ url: '/', remoteAddress });
    const cookie = String(panel.headers['set-cookie']).split(';')[0];
    expect(cookie.startsWith(`${CLIENT_ID_COOKIE}=`)).toBe(true);

    const created = await second.inject({
      method: 'POST',
      url: '/api/microblog',
      remoteAddress,
      headers: { cookie },
      payload: { content: 'Through two replicas', quest_topic: 'digital_ethics', student_name: 'Ada' },
    });
    expect(created.statusCode).toBe(201);
    const statuses: number[] = [created.statusCode];
    for (let i = 0; i < 5; i += 1) {
      const response = await replicas[i % 2].inject({
        method: 'POST',
        url: '/api/microblog/reaction',
        remoteAddress,
        headers: { cookie },
        payload: { post_id: created.json().id },
      });
      statuses.push(response.statusCode);
      if (response.statusCode === 429) {
        expect(response.headers['retry-after']).toMatch(/^[1-9]\d*$/);
        expect(response.json().detail).toMatch(BROWSER);
      }
    }
    // 4 writes for the browser across both replicas; alone, each replica would have allowed 4
    expect(statuses).toEqual([201, 200, 200, 200, 429, 429]);
  });
});
