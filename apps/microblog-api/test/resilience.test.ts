import { buildOutageTestApp, openForTheseTests, waitUntilReady } from '@platform/testing';
import { buildApp } from '../src/app';
import { loadConfig } from '../src/config';

/**
 * The database goes away while the service runs: it answers 503 in its error format, readiness
 * fails, liveness does not, and it recovers by itself when the database returns — no restart.
 * The outage is a TCP proxy the test cuts, in front of the test PostgreSQL (DATABASE_URL, or the
 * local server Jest's global setup provides).
 */
describe('database outage', () => {
  const outage = openForTheseTests(() =>
    buildOutageTestApp({ service: 'microblog', loadConfig, buildApp, env: { WRITE_RATE_LIMIT: '1000' } }),
  );

  beforeAll(async () => {
    // The service's tables are in its own schema, not in public.
    const { app, config } = outage();
    const tables = await app.database.db
      .selectFrom('information_schema.tables' as never)
      .select(['table_schema' as never, 'table_name' as never])
      .where('table_name' as never, '=', 'posts' as never)
      .where('table_schema' as never, 'in', [config.database.schema, 'public'] as never)
      .execute();
    expect(tables).toEqual([{ table_schema: config.database.schema, table_name: 'posts' }]);
  });

  const post = (content: string) =>
    outage().app.inject({
      method: 'POST',
      url: '/api/microblog',
      payload: { content, quest_topic: 'privacy_security', student_name: 'Ada' },
    });

  test('503 while the database is unreachable, then recovery without a restart, losing nothing', async () => {
    const { app, proxy } = outage();
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
