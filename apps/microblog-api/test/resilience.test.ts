import type { FastifyInstance } from 'fastify';
import { cuttableDatabase, type CuttableDatabase, type TcpProxy } from '@platform/db/testing';
import { waitUntilReady } from '@platform/http-kit/testing';
import { buildApp } from '../src/app';
import { loadConfig } from '../src/config';

/**
 * The database goes away while the service runs: it answers 503 in its error format, readiness
 * fails, liveness does not, and it recovers by itself when the database returns — no restart.
 * The outage is a TCP proxy the test cuts, in front of the test PostgreSQL (DATABASE_URL, or the
 * local server Jest's global setup provides).
 */
describe('database outage', () => {
  let outage: CuttableDatabase;
  let proxy: TcpProxy;
  let app: FastifyInstance;

  beforeAll(async () => {
    outage = await cuttableDatabase('microblog');
    proxy = outage.proxy;
    const config = loadConfig({ LOG_LEVEL: 'silent', WRITE_RATE_LIMIT: '1000' });
    config.database = outage.config;
    app = await buildApp(config);
    await app.ready();
    // The service's tables are in its own schema, not in public.
    const tables = await app.database.db
      .selectFrom('information_schema.tables' as never)
      .select(['table_schema' as never, 'table_name' as never])
      .where('table_name' as never, '=', 'posts' as never)
      .where('table_schema' as never, 'in', [outage.config.schema, 'public'] as never)
      .execute();
    expect(tables).toEqual([{ table_schema: outage.config.schema, table_name: 'posts' }]);
  });

  afterAll(async () => {
    await app?.close();
    await outage?.close();
  });

  const post = (content: string) =>
    app.inject({
      method: 'POST',
      url: '/api/microblog',
      payload: { content, quest_topic: 'privacy_security', student_name: 'Ada' },
    });

  test('503 while the database is unreachable, then recovery without a restart, losing nothing', async () => {
    const before = await post('written before the outage');
    expect(before.statusCode).toBe(201);
    expect((await app.inject('/readyz')).statusCode).toBe(200);

    proxy.cut();

    for (const response of [await app.inject('/api/microblog'), await post('written during the outage')]) {
      expect(response.statusCode).toBe(503);
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(response.headers['retry-after']).toBe('5');
      const body = response.json();
      expect(body).toMatchObject({ type: 'about:blank', title: 'Service Unavailable', status: 503 });
      expect(body.detail).toMatch(/unavailable/i);
      expect(JSON.stringify(body)).not.toMatch(/ECONN|terminated|at .*\.ts/);
    }
    const ready = await app.inject('/readyz');
    expect(ready.statusCode).toBe(503);
    expect(ready.json()).toMatchObject({ status: 503, title: 'Service Unavailable' });
    expect((await app.inject('/healthz')).statusCode).toBe(200);

    proxy.restore();

    expect(await waitUntilReady(app)).toBe(true);

    const after = await post('written after the outage');
    expect(after.statusCode).toBe(201);
    const listed = (await app.inject('/api/microblog')).json() as { content: string }[];
    expect(listed.map((p) => p.content)).toEqual(['written after the outage', 'written before the outage']);
  });
});
