/**
 * Login limits with a Redis that cannot be reached (#21): start-up does not wait for it beyond the
 * platform store's connect timeout, logins never fail because of it, and the failed-login limits
 * still hold in each process (the replicas sharing them through a live Redis: the system test
 * login-limits.system.test.ts). Needs no Redis: the URL names a closed port.
 */
import { freePort } from '@platform/db/testing';
import { buildTestApp, type TestApp } from './support/app';
import { ATTACKER, failLogins, loginFrom, loginLimits, OWNER } from './support/login-limits';

describe('login limits while Redis is unreachable', () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  test('start-up goes on, logins work (never a 500), and the failed-login limit still holds in the process', async () => {
    const closed = await freePort();
    const started = Date.now();
    t = await buildTestApp(
      loginLimits({ REDIS_URL: `redis://127.0.0.1:${closed}/0`, LOGIN_FAILURES_PER_ACCOUNT: '10' }),
    );
    // The platform store waits at most its connect timeout (5 s) for Redis, then starts anyway.
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(t.app.rateLimitRedis?.status).not.toBe('ready');

    const alice = await t.register({ username: 'alice', password: 'alice-pw' });
    expect((await loginFrom(t, OWNER, 'alice', alice.password)).statusCode).toBe(200);
    await failLogins(t, ATTACKER, 'alice', 10);
    const refused = await loginFrom(t, ATTACKER, 'alice', 'guess10');
    expect(refused.statusCode).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(refused.json()).toMatchObject({ code: 429, errors: { json: { password: [expect.any(String)] } } });
    // The owner elsewhere is not locked out, and a success is given back as usual.
    for (let i = 0; i < 3; i += 1)
      expect((await loginFrom(t, OWNER, 'alice', alice.password)).statusCode).toBe(200);
    expect((await t.app.inject('/healthz')).statusCode).toBe(200);
  });

  test('closing the app leaves no long timer of the dead connection behind (nothing keeps Jest alive)', async () => {
    const app = await buildTestApp({ REDIS_URL: `redis://127.0.0.1:${await freePort()}/0` });
    // ioredis arms a timer to end the socket on close even when Redis was never reached (the socket
    // is long gone, so only the timer ends it): the timers armed while closing, and for how long.
    const armed = jest.spyOn(global, 'setTimeout');
    try {
      await app.close();
      // Still pending once the app has closed (neither fired nor cleared), with their delays.
      const pending = armed.mock.calls
        .map((call, i) => ({ ms: Number(call[1] ?? 0), timer: armed.mock.results[i].value }))
        .filter(({ timer }) => !(timer as { _destroyed?: boolean })._destroyed)
        .map(({ ms }) => ms);
      // At most the store's short disconnect timeout: Jest exits as soon as the tests end.
      expect(pending.filter((ms) => ms >= 1000)).toEqual([]);
    } finally {
      armed.mockRestore();
    }
  });
});
