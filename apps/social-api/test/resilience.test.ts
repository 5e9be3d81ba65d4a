import { buildOutageTestApp, openForTheseTests, waitUntilReady } from '@platform/testing';
import { buildApp } from '../src/app';
import { loadConfig } from '../src/config';
import { basic } from './support/app';

/**
 * The database goes away while the service runs: token checks and writes answer 503 in the Flask
 * error format (never a 401 that would log the React client out, never a 500), readiness fails,
 * liveness does not, and the service recovers by itself. The outage is a TCP proxy the test cuts,
 * in front of the test PostgreSQL (DATABASE_URL, or the local server Jest's global setup provides).
 */
describe('database outage', () => {
  const outage = openForTheseTests(() =>
    buildOutageTestApp({
      service: 'social',
      loadConfig,
      buildApp,
      env: { ARGON2_MEMORY_KIB: '1024', ARGON2_TIME_COST: '1' },
    }),
  );

  test('503 while the database is unreachable, then recovery without a restart, losing nothing', async () => {
    const { app, proxy } = outage();
    const registered = await app.inject({
      method: 'POST',
      url: '/api/users',
      payload: { username: 'susan', email: 'susan@example.com', password: 'cat' },
    });
    expect(registered.statusCode).toBe(201);
    const token = (
      await app.inject({
        method: 'POST',
        url: '/api/tokens',
        headers: { authorization: basic('susan', 'cat') },
      })
    ).json().access_token;
    const bearer = { authorization: `Bearer ${token}` };
    expect(
      (await app.inject({ method: 'POST', url: '/api/posts', headers: bearer, payload: { text: 'before' } }))
        .statusCode,
    ).toBe(201);

    proxy.cut();

    const during = [
      await app.inject({ url: '/api/feed', headers: bearer }),
      await app.inject({ method: 'POST', url: '/api/posts', headers: bearer, payload: { text: 'during' } }),
      await app.inject({
        method: 'POST',
        url: '/api/tokens',
        headers: { authorization: basic('susan', 'cat') },
      }),
      await app.inject({
        method: 'POST',
        url: '/api/users',
        payload: { username: 'john', email: 'john@example.com', password: 'dog' },
      }),
    ];
    for (const response of during) {
      expect(response.statusCode).toBe(503);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      expect(response.headers['retry-after']).toBe('5');
      expect(response.headers['www-authenticate']).toBeUndefined();
      const body = response.json();
      expect(body).toMatchObject({ code: 503, message: 'Service Unavailable' });
      expect(JSON.stringify(body)).not.toMatch(/ECONN|terminated|at .*\.ts/);
    }
    expect((await app.inject('/readyz')).statusCode).toBe(503);
    expect((await app.inject('/healthz')).statusCode).toBe(200);

    proxy.restore();

    expect(await waitUntilReady(app)).toBe(true);

    // The same token still works: nothing about the session was lost.
    expect(
      (await app.inject({ method: 'POST', url: '/api/posts', headers: bearer, payload: { text: 'after' } }))
        .statusCode,
    ).toBe(201);
    const feed = (await app.inject({ url: '/api/feed', headers: bearer })).json();
    expect(feed.data.map((p: { text: string }) => p.text)).toEqual(['after', 'before']);
  });
});
