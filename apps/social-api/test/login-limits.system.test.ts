/**
 * The failed-login limits shared through Redis across replicas (#21): two instances of the real app on
 * one schema and one Redis meet every limit as one (per address, per account from an address, the
 * per-account delays across addresses), a success refunds on both, and the shared Redis connection
 * (the platform rate-limit store's) closes with the app. Needs the machine's Redis (TEST_REDIS_URL,
 * else 127.0.0.1:6379): a system test. Client addresses through inject's remoteAddress.
 */
import { deleteTestRedisKeys, testRedisKeyPrefix, testRedisKeys, testRedisUrl } from '@platform/testing';
import { buildTestApp, type TestApp } from './support/app';
import { ATTACKER, expectTooMany, loginFrom, loginLimits, OWNER, type Answer } from './support/login-limits';

/** A throttled login: the service's 429 on `password`, saying failed logins; its Retry-After seconds. */
const expectLoginRefused = (res: Answer) => expectTooMany(res, 'password', 'failed logins');

describe('failed-login limits of two replicas sharing one Redis', () => {
  // A key prefix of this run (ioredis reads `keyPrefix` from the URL), and one per test below it:
  // parallel runs and the tests of this file never share a counter; the clean-up deletes this run's keys.
  const runPrefix = testRedisKeyPrefix('social-login-limits-test');
  let tests = 0;
  let replicas: TestApp[] = [];
  let prefix = '';

  /** Two instances of the real app: the same schema, the same Redis, each its own process state. */
  async function twoReplicas(env: Record<string, string>): Promise<[TestApp, TestApp]> {
    tests += 1;
    prefix = `${runPrefix}${tests}:`;
    const shared = { ...env, REDIS_URL: testRedisUrl(prefix) };
    const first = await buildTestApp(shared);
    replicas = [first];
    const second = await buildTestApp(shared, { over: first });
    replicas = [second, first];
    return [first, second];
  }

  afterEach(async () => {
    // The one over the other's database first.
    for (const replica of replicas.splice(0)) await replica.close();
  });
  afterAll(() => deleteTestRedisKeys(`${runPrefix}*`));

  test('10 failures per account from one address, 5 on each replica: the 11th is a 429 with Retry-After on either', async () => {
    const [a, b] = await twoReplicas(loginLimits({ LOGIN_FAILURES_PER_ACCOUNT: '10' }));
    const alice = await a.register({ username: 'alice', password: 'alice-pw' });
    for (let i = 0; i < 10; i += 1)
      expect((await loginFrom(i % 2 ? b : a, ATTACKER, 'alice', `guess${i}`)).statusCode).toBe(401);
    const wait = expectLoginRefused(await loginFrom(a, ATTACKER, 'alice', 'guess10'));
    expect(expectLoginRefused(await loginFrom(b, ATTACKER, 'alice', alice.password))).toBeLessThanOrEqual(
      wait,
    );
    // The owner, from their own address, logs in through either replica.
    expect((await loginFrom(a, OWNER, 'alice', alice.password)).statusCode).toBe(200);
    expect((await loginFrom(b, OWNER, 'alice', alice.password)).statusCode).toBe(200);

    // The counters are this test's keys in Redis: the URL's prefix, then the login limits' names.
    const keys = await testRedisKeys(`${prefix}*`);
    expect(keys.some((key) => key.startsWith(`${prefix}social-limits:login-account`))).toBe(true);
  });

  test('failures per address over several accounts, alternating replicas: the limit holds as one', async () => {
    const [a, b] = await twoReplicas(loginLimits({ LOGIN_FAILURES_PER_ADDRESS: '6' }));
    await a.register({ username: 'alice', password: 'alice-pw' });
    const bob = await b.register({ username: 'bob', password: 'bob-pw' });
    for (let i = 0; i < 6; i += 1) {
      const name = ['alice', 'bob', 'nobody'][i % 3];
      expect((await loginFrom(i % 2 ? b : a, ATTACKER, name, `guess${i}`)).statusCode).toBe(401);
    }
    expectLoginRefused(await loginFrom(b, ATTACKER, 'alice', 'guess6'));
    expectLoginRefused(await loginFrom(a, ATTACKER, 'bob', bob.password));
    expect((await loginFrom(b, OWNER, 'bob', bob.password)).statusCode).toBe(200);
  });

  test('20 concurrent guesses split over both replicas: only the limit of 10 is checked, the rest are 429', async () => {
    const [a, b] = await twoReplicas(loginLimits({ LOGIN_FAILURES_PER_ACCOUNT: '10' }));
    await a.register({ username: 'alice', password: 'alice-pw' });
    const checks = [jest.spyOn(a.app.passwords, 'check'), jest.spyOn(b.app.passwords, 'check')];
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => loginFrom(i % 2 ? b : a, ATTACKER, 'alice', `guess${i}`)),
    );
    const statuses = answers.map((r) => r.statusCode);
    expect(statuses.filter((s) => s === 401)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(10);
    expect(checks[0].mock.calls.length + checks[1].mock.calls.length).toBe(10);
    for (const refused of answers.filter((r) => r.statusCode === 429)) expectLoginRefused(refused);
    for (const check of checks) check.mockRestore();
  });

  test('the per-account delay across addresses is shared: an address that failed on one replica waits on the other', async () => {
    const [a, b] = await twoReplicas(loginLimits({ LOGIN_FAILURES_PER_ACCOUNT_ANYWHERE: '4' }));
    const alice = await a.register({ username: 'alice', password: 'alice-pw' });
    const guessers = Array.from({ length: 8 }, (_, i) => `198.51.100.${i + 1}`);
    // One failure from each address, alternating replicas: each replica sees only half of them.
    for (const [i, address] of guessers.entries())
      expect((await loginFrom(i % 2 ? b : a, address, 'alice', `guess-${address}`)).statusCode).toBe(401);
    // Beyond 4 failures from everywhere, the 5th to 8th addresses wait 1, 2, 4 and 8 s: asked on the
    // other replica than the one they failed on, the later ones (not yet over) still wait.
    const waits = [];
    for (const [i, address] of guessers.entries()) {
      if (i < 6) continue;
      waits.push(expectLoginRefused(await loginFrom(i % 2 ? a : b, address, 'alice', `again-${address}`)));
    }
    expect(waits[0]).toBeGreaterThan(1);
    expect(waits[0]).toBeLessThanOrEqual(4);
    expect(waits[1]).toBeGreaterThan(4);
    expect(waits[1]).toBeLessThanOrEqual(8);
    // Addresses that never failed for the account are not delayed: the owner logs in on both.
    expect((await loginFrom(a, OWNER, 'alice', alice.password)).statusCode).toBe(200);
    expect((await loginFrom(b, OWNER, 'alice', alice.password)).statusCode).toBe(200);
  });

  test('a success on one replica refunds its attempt on both', async () => {
    const [a, b] = await twoReplicas(loginLimits({ LOGIN_FAILURES_PER_ACCOUNT: '4' }));
    const alice = await a.register({ username: 'alice', password: 'alice-pw' });
    for (let i = 0; i < 3; i += 1)
      expect((await loginFrom(i % 2 ? b : a, OWNER, 'alice', `typo${i}`)).statusCode).toBe(401);
    // Each success is counted before its check, then given back: it uses none of the shared budget.
    for (const replica of [b, a, b, a])
      expect((await loginFrom(replica, OWNER, 'alice', alice.password)).statusCode).toBe(200);
    expect((await loginFrom(a, OWNER, 'alice', 'typo3')).statusCode).toBe(401);
    expectLoginRefused(await loginFrom(b, OWNER, 'alice', 'typo4'));
  });

  test('a success ends the lockouts in a row on both replicas: the next lockout lasts one window again', async () => {
    const [a, b] = await twoReplicas(
      loginLimits({
        LOGIN_FAILURES_PER_ACCOUNT: '2',
        LOGIN_WINDOW_SECONDS: '2',
        LOGIN_MAX_WAIT_SECONDS: '3600',
      }),
    );
    const alice = await a.register({ username: 'alice', password: 'alice-pw' });
    const lockOut = async () => {
      expect((await loginFrom(a, OWNER, 'alice', 'typo')).statusCode).toBe(401);
      expect((await loginFrom(b, OWNER, 'alice', 'typo')).statusCode).toBe(401);
      return expectLoginRefused(await loginFrom(a, OWNER, 'alice', 'typo'));
    };
    const waitOut = async (seconds: number) => {
      await new Promise((resolve) => setTimeout(resolve, seconds * 1000 + 100));
    };
    expect(await lockOut()).toBeLessThanOrEqual(2);
    await waitOut(2);
    // Without the success, the second lockout in a row would last twice as long (4 s).
    expect((await loginFrom(b, OWNER, 'alice', alice.password)).statusCode).toBe(200);
    expect(await lockOut()).toBeLessThanOrEqual(2);
  });

  test("the Redis connection is the platform store's, one per instance, and it closes with the app", async () => {
    const [a, b] = await twoReplicas(loginLimits({}));
    const connections = [a.app.rateLimitRedis, b.app.rateLimitRedis];
    expect(connections.map((redis) => redis?.status)).toEqual(['ready', 'ready']);
    await a.register({ username: 'alice', password: 'alice-pw' });
    for (const replica of replicas.splice(0)) await replica.close();
    // Disconnected, no reconnect timer: nothing keeps the process (or Jest) alive.
    expect(connections.map((redis) => redis?.status)).toEqual(['end', 'end']);
  });
});
