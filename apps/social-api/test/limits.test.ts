/**
 * Abuse limits of the routes that check or hash a password or send mail (#11): failed logins per
 * address and per account from an address (never locking the owner out from elsewhere), the window
 * restarting while a client keeps trying, registrations and reset requests per address, reset mails
 * per target; bounded hashing (503 when the queue is full); OWASP argon2 parameters with re-hashing
 * of older hashes on login. Real app, real database; client addresses through inject's remoteAddress.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { basic, buildTestApp, type TestApp } from './support/app';

const ATTACKER = '198.51.100.7';
const OWNER = '203.0.113.20';
const NEIGHBOUR = '192.0.2.99';

/** Limits high enough for the set-up, low where a test looks. */
const limits = (overrides: Record<string, string>) => ({
  LOGIN_FAILURES_PER_ADDRESS: '1000',
  LOGIN_FAILURES_PER_ACCOUNT: '1000',
  REGISTRATIONS_PER_ADDRESS: '1000',
  RESETS_PER_ADDRESS: '1000',
  RESETS_PER_EMAIL: '1000',
  ...overrides,
});

const loginFrom = (t: TestApp, address: string, name: string, password: string) =>
  t.app.inject({
    method: 'POST',
    url: '/api/tokens',
    remoteAddress: address,
    headers: { authorization: basic(name, password) },
  });

function expectTooMany(res: { statusCode: number; headers: Record<string, unknown>; json(): unknown }) {
  expect(res.statusCode).toBe(429);
  expect(res.json()).toEqual({
    code: 429,
    message: 'Too Many Requests',
    description: 'This user has exceeded an allotted request count. Try again later.',
  });
  expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  expect(res.headers['x-content-type-options']).toBe('nosniff');
}

describe('failed logins', () => {
  let t: TestApp;
  afterEach(() => t?.close());

  test('per address: over the limit every login from there is a 429 (even a right one); other addresses log in', async () => {
    t = await buildTestApp(limits({ LOGIN_FAILURES_PER_ADDRESS: '3' }));
    const alice = await t.register({ username: 'alice', password: 'alice-pw' });
    await t.register({ username: 'bob', password: 'bob-pw' });
    // Three failures over two accounts from one address: each an ordinary 401.
    for (const name of ['alice', 'bob', 'nobody'])
      expect((await loginFrom(t, ATTACKER, name, 'guess')).statusCode).toBe(401);
    expectTooMany(await loginFrom(t, ATTACKER, 'bob', 'guess'));
    expectTooMany(await loginFrom(t, ATTACKER, 'alice', alice.password));
    expect((await loginFrom(t, OWNER, 'alice', alice.password)).statusCode).toBe(200);
    expect((await loginFrom(t, NEIGHBOUR, 'bob', 'guess')).statusCode).toBe(401);
  });

  test('per account from one address: the attacker is stopped, the owner elsewhere is not locked out', async () => {
    t = await buildTestApp(limits({ LOGIN_FAILURES_PER_ACCOUNT: '2' }));
    const alice = await t.register({ username: 'alice', password: 'alice-pw' });
    await t.register({ username: 'bob', password: 'bob-pw' });
    for (let i = 0; i < 2; i += 1)
      expect((await loginFrom(t, ATTACKER, 'alice', `guess${i}`)).statusCode).toBe(401);
    expectTooMany(await loginFrom(t, ATTACKER, 'alice', 'guess2'));
    // The same account by its email (case-folded) is the same account.
    expectTooMany(await loginFrom(t, ATTACKER, 'ALICE', 'guess3'));
    // Another account from that address is still checked.
    expect((await loginFrom(t, ATTACKER, 'bob', 'guess')).statusCode).toBe(401);
    expect((await loginFrom(t, ATTACKER, 'bob', 'bob-pw')).statusCode).toBe(200);
    // The owner, from their own address, logs in at once.
    expect((await loginFrom(t, OWNER, 'alice', alice.password)).statusCode).toBe(200);
  });

  test('successful logins do not count', async () => {
    t = await buildTestApp(limits({ LOGIN_FAILURES_PER_ADDRESS: '2', LOGIN_FAILURES_PER_ACCOUNT: '2' }));
    const alice = await t.register({ username: 'alice', password: 'alice-pw' });
    for (let i = 0; i < 6; i += 1)
      expect((await loginFrom(t, OWNER, 'alice', alice.password)).statusCode).toBe(200);
    expect((await loginFrom(t, OWNER, 'alice', 'typo')).statusCode).toBe(401);
    expect((await loginFrom(t, OWNER, 'alice', alice.password)).statusCode).toBe(200);
  });

  test('the wait restarts while a client keeps trying, and ends one window after it stops', async () => {
    t = await buildTestApp(limits({ LOGIN_FAILURES_PER_ADDRESS: '1', LOGIN_WINDOW_SECONDS: '1' }));
    await t.register({ username: 'alice', password: 'alice-pw' });
    expect((await loginFrom(t, ATTACKER, 'alice', 'guess')).statusCode).toBe(401);
    await sleep(650);
    expectTooMany(await loginFrom(t, ATTACKER, 'alice', 'guess'));
    // 1.3 s after the first failure a fixed window would be over; this one restarted at 0.65 s.
    await sleep(650);
    expectTooMany(await loginFrom(t, ATTACKER, 'alice', 'guess'));
    await sleep(1300);
    expect((await loginFrom(t, ATTACKER, 'alice', 'alice-pw')).statusCode).toBe(200);
  });

  test('a wrong old password on PUT /api/me counts as a failed login of the account', async () => {
    t = await buildTestApp(limits({ LOGIN_FAILURES_PER_ACCOUNT: '2' }));
    const alice = await t.register({ username: 'alice', password: 'alice-pw' });
    const change = (old: string) =>
      t.app.inject({
        method: 'PUT',
        url: '/api/me',
        remoteAddress: ATTACKER,
        headers: { authorization: `Bearer ${alice.token}` },
        payload: { password: 'new-pw', old_password: old },
      });
    expect((await change('guess1')).statusCode).toBe(400);
    expect((await change('guess2')).statusCode).toBe(400);
    expectTooMany(await change(alice.password));
    expect((await t.storedUser(alice.id)).password_hash).toMatch(/^\$argon2id\$/);
    expect((await loginFrom(t, OWNER, 'alice', alice.password)).statusCode).toBe(200);
  });
});

describe('registrations and reset requests', () => {
  let t: TestApp;
  afterEach(() => t?.close());

  const registerFrom = (address: string, username: string) =>
    t.app.inject({
      method: 'POST',
      url: '/api/users',
      remoteAddress: address,
      payload: { username, email: `${username}@example.com`, password: 'password' },
    });

  test('registrations per address: over the limit a 429 and nothing stored; other addresses register', async () => {
    t = await buildTestApp(limits({ REGISTRATIONS_PER_ADDRESS: '2' }));
    expect((await registerFrom(ATTACKER, 'bot1')).statusCode).toBe(201);
    expect((await registerFrom(ATTACKER, 'bot2')).statusCode).toBe(201);
    expectTooMany(await registerFrom(ATTACKER, 'bot3'));
    expect(await t.countRows('users', (q) => q.where('username', '=', 'bot3'))).toBe(0);
    expect((await registerFrom(OWNER, 'carol')).statusCode).toBe(201);
  });

  test('reset requests per address and per target address', async () => {
    t = await buildTestApp(limits({ RESETS_PER_ADDRESS: '2', RESETS_PER_EMAIL: '1' }));
    const requestFrom = (address: string, email: string) =>
      t.app.inject({ method: 'POST', url: '/api/tokens/reset', remoteAddress: address, payload: { email } });
    expect((await requestFrom(ATTACKER, 'alice@example.com')).statusCode).toBe(204);
    // One mail per target address an hour, whoever asks.
    expectTooMany(await requestFrom(OWNER, 'ALICE@example.com'));
    expect((await requestFrom(ATTACKER, 'bob@example.com')).statusCode).toBe(204);
    expectTooMany(await requestFrom(ATTACKER, 'carol@example.com'));
    expect((await requestFrom(NEIGHBOUR, 'dave@example.com')).statusCode).toBe(204);
  });
});

describe('password hashing', () => {
  let t: TestApp;
  let other: TestApp | undefined;
  afterEach(async () => {
    await other?.close();
    other = undefined;
    await t?.close();
  });

  test('a full hashing queue is a 503 with Retry-After, never a 500, and the logins after it work', async () => {
    // Hashes slow enough (32 MiB) that the logins meet at the gate.
    t = await buildTestApp(
      limits({ ARGON2_CONCURRENCY: '1', ARGON2_QUEUE: '1', ARGON2_MEMORY_KIB: '32768' }),
    );
    const alice = await t.register({ username: 'alice', password: 'alice-pw' });
    const answers = await Promise.all(
      Array.from({ length: 12 }, () => loginFrom(t, OWNER, 'alice', alice.password)),
    );
    const statuses = answers.map((r) => r.statusCode);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(2);
    expect(statuses.filter((s) => s === 503).length).toBeGreaterThanOrEqual(1);
    expect(statuses.every((s) => s === 200 || s === 503)).toBe(true);
    const busy = answers.find((r) => r.statusCode === 503)!;
    expect(busy.json()).toMatchObject({ code: 503, message: 'Service Unavailable' });
    expect(busy.headers['retry-after']).toBeDefined();
    expect(t.app.passwords.load()).toEqual({ active: 0, waiting: 0 });
    expect((await loginFrom(t, OWNER, 'alice', alice.password)).statusCode).toBe(200);
  });

  test('a right password from a clean address is checked before the queued guesses of an address that has failed', async () => {
    // One hash at a time, slow enough (32 MiB) that the requests meet at the gate.
    t = await buildTestApp(
      limits({ ARGON2_CONCURRENCY: '1', ARGON2_QUEUE: '100', ARGON2_MEMORY_KIB: '32768' }),
    );
    const alice = await t.register({ username: 'alice', password: 'alice-pw' });
    expect((await loginFrom(t, ATTACKER, 'alice', 'guess')).statusCode).toBe(401);
    const finished: string[] = [];
    const guesses = Array.from({ length: 6 }, (_, i) =>
      loginFrom(t, ATTACKER, 'alice', `guess${i}`).then((r) => finished.push(`guess ${r.statusCode}`)),
    );
    const owner = loginFrom(t, OWNER, 'alice', alice.password).then((r) =>
      finished.push(`owner ${r.statusCode}`),
    );
    await Promise.all([...guesses, owner]);
    expect(finished).toContain('owner 200');
    // At most the guess already being hashed, and one that reached the gate before the owner, go first.
    expect(finished.indexOf('owner 200')).toBeLessThanOrEqual(2);
  });

  test("OWASP's parameters by default; a hash with other parameters verifies and is re-hashed on login", async () => {
    t = await buildTestApp();
    const alice = await t.register({ username: 'alice', password: 'alice-pw' });
    // Stored by the test app's cheap parameters.
    const before = (await t.storedUser(alice.id)).password_hash;
    expect(before).toMatch(/^\$argon2id\$v=19\$m=1024,t=1,p=1\$/);
    // The same database served at the defaults (OWASP's row).
    other = await buildTestApp(
      { ARGON2_MEMORY_KIB: '19456', ARGON2_TIME_COST: '2', ARGON2_PARALLELISM: '1' },
      { over: t },
    );
    expect(other.config.passwordHashing).toMatchObject({ memoryKib: 19456, timeCost: 2, parallelism: 1 });
    expect((await other.login('alice', 'wrong')).statusCode).toBe(401);
    expect((await t.storedUser(alice.id)).password_hash).toBe(before);
    expect((await other.login('alice', alice.password)).statusCode).toBe(200);
    const after = (await t.storedUser(alice.id)).password_hash;
    expect(after).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    // Re-hashed once: the next login leaves it alone, and it still logs in.
    expect((await other.login('alice', alice.password)).statusCode).toBe(200);
    expect((await t.storedUser(alice.id)).password_hash).toBe(after);
  });
});
