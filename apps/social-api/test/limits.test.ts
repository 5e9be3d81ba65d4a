/**
 * Abuse limits of the routes that check or hash a password or send mail (#11, #21): failed logins per
 * address and per account from an address (never locking the owner out from elsewhere), locks that
 * end when announced and grow for a client that keeps failing, a per-account limit across addresses,
 * attempts counted before they are checked; registrations and reset requests per address (production
 * mode, or when set), reset mails per target; throttled answers with `errors.json.<field>`; bounded
 * hashing (503 when the queue is full); OWASP argon2 parameters with re-hashing of older hashes on
 * login. Real app, real database; client addresses through inject's remoteAddress.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildTestApp, type TestApp } from './support/app';
import { ATTACKER, expectTooMany, failLogins, loginFrom, loginLimits, OWNER } from './support/login-limits';

const NEIGHBOUR = '192.0.2.99';

/** Limits high enough for the set-up, low where a test looks. */
const limits = (overrides: Record<string, string>) =>
  loginLimits({
    REGISTRATIONS_PER_ADDRESS: '1000',
    RESETS_PER_ADDRESS: '1000',
    RESETS_PER_EMAIL: '1000',
    ...overrides,
  });

/** A production configuration (production refuses known or short keys: a fresh random one). */
const production = (overrides: Record<string, string> = {}) =>
  limits({
    NODE_ENV: 'production',
    SECRET_KEY: randomBytes(32).toString('hex'),
    REGISTRATIONS_PER_ADDRESS: '',
    RESETS_PER_ADDRESS: '',
    RESETS_PER_EMAIL: '',
    ...overrides,
  });

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
    expectTooMany(await loginFrom(t, ATTACKER, 'bob', 'guess'), 'password');
    expectTooMany(await loginFrom(t, ATTACKER, 'alice', alice.password), 'password');
    expect((await loginFrom(t, OWNER, 'alice', alice.password)).statusCode).toBe(200);
    expect((await loginFrom(t, NEIGHBOUR, 'bob', 'guess')).statusCode).toBe(401);
  });

  test('per account from one address: the attacker is stopped, the owner elsewhere is not locked out', async () => {
    t = await buildTestApp(limits({ LOGIN_FAILURES_PER_ACCOUNT: '2' }));
    const alice = await t.register({ username: 'alice', password: 'alice-pw' });
    await t.register({ username: 'bob', password: 'bob-pw' });
    await failLogins(t, ATTACKER, 'alice', 2);
    expectTooMany(await loginFrom(t, ATTACKER, 'alice', 'guess2'), 'password');
    // The same account by its email (case-folded) is the same account.
    expectTooMany(await loginFrom(t, ATTACKER, 'ALICE', 'guess3'), 'password');
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

  // #21 replaces the restarting window (continueExceeding) this file pinned before: an owner who kept
  // retrying was never let back in.
  test('an owner who mistyped ten times and keeps retrying from the same address gets in once the announced wait is over', async () => {
    t = await buildTestApp(limits({ LOGIN_FAILURES_PER_ACCOUNT: '10', LOGIN_WINDOW_SECONDS: '2' }));
    const alice = await t.register({ username: 'alice', password: 'alice-pw' });
    await failLogins(t, OWNER, 'alice', 10, 'typo');
    const announcedAt = Date.now();
    const deadline =
      announcedAt + expectTooMany(await loginFrom(t, OWNER, 'alice', alice.password), 'password') * 1000;
    expect(deadline - announcedAt).toBeLessThanOrEqual(2000);
    // Retrying all through the wait: each answer is a 429 whose wait ends no later than announced.
    while (Date.now() < deadline - 300) {
      const retry = await loginFrom(t, OWNER, 'alice', alice.password);
      const asked = Date.now();
      expect(asked + expectTooMany(retry, 'password') * 1000).toBeLessThanOrEqual(deadline + 1000);
      await sleep(200);
    }
    await sleep(Math.max(0, deadline - Date.now()) + 50);
    expect((await loginFrom(t, OWNER, 'alice', alice.password)).statusCode).toBe(200);
  });

  test('a client that keeps failing meets growing waits: one window, then twice, then up to the cap', async () => {
    t = await buildTestApp(
      limits({ LOGIN_FAILURES_PER_ACCOUNT: '2', LOGIN_WINDOW_SECONDS: '1', LOGIN_MAX_WAIT_SECONDS: '3' }),
    );
    await t.register({ username: 'alice', password: 'alice-pw' });
    const waits: number[] = [];
    for (let lockout = 0; lockout < 3; lockout += 1) {
      expect((await loginFrom(t, ATTACKER, 'alice', 'guess')).statusCode).toBe(401);
      expect((await loginFrom(t, ATTACKER, 'alice', 'guess')).statusCode).toBe(401);
      const wait = expectTooMany(await loginFrom(t, ATTACKER, 'alice', 'guess'), 'password');
      waits.push(wait);
      await sleep(wait * 1000 + 100);
    }
    expect(waits).toEqual([1, 2, 3]);
  });

  test('64 concurrent wrong passwords for one account from one address: only the limit is checked, the rest are 429', async () => {
    t = await buildTestApp(
      limits({ LOGIN_FAILURES_PER_ACCOUNT: '10', LOGIN_FAILURES_PER_ADDRESS: '30', ARGON2_QUEUE: '200' }),
    );
    await t.register({ username: 'alice', password: 'alice-pw' });
    // The real hasher's own check, counted (it still hashes): how many passwords were verified.
    const checks = jest.spyOn(t.app.passwords, 'check');
    const answers = await Promise.all(
      Array.from({ length: 64 }, (_, i) => loginFrom(t, ATTACKER, 'alice', `guess${i}`)),
    );
    const statuses = answers.map((r) => r.statusCode);
    expect(statuses.filter((s) => s === 401)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(54);
    expect(checks).toHaveBeenCalledTimes(10);
    for (const refused of answers.filter((r) => r.statusCode === 429)) expectTooMany(refused, 'password');
    checks.mockRestore();
  });

  test('a guessing run rotating through 64 addresses meets growing delays; the owner from a new address logs in at once', async () => {
    t = await buildTestApp(limits({ LOGIN_FAILURES_PER_ACCOUNT_ANYWHERE: '10' }));
    const alice = await t.register({ username: 'alice', password: 'alice-pw' });
    const checks = jest.spyOn(t.app.passwords, 'check');
    const guessers = Array.from({ length: 64 }, (_, i) => `198.51.100.${i + 1}`);
    // Round 1: every address is clean for the account, so each guess is checked (a wrong one: 401).
    for (const address of guessers)
      expect((await loginFrom(t, address, 'alice', `guess-${address}`)).statusCode).toBe(401);
    // Round 2: beyond 10 failures from everywhere, an address that failed must wait, longer for each later failure.
    const waits: number[] = [];
    for (const address of guessers.slice(10)) {
      waits.push(expectTooMany(await loginFrom(t, address, 'alice', `again-${address}`), 'password'));
    }
    expect(waits[0]).toBe(1);
    for (let i = 1; i < waits.length; i += 1) expect(waits[i]).toBeGreaterThanOrEqual(waits[i - 1]);
    expect(waits.slice(0, 5)).toEqual([1, 2, 4, 8, 16]);
    expect(waits.at(-1)).toBe(t.config.limits.loginMaxWaitSeconds);
    expect(checks).toHaveBeenCalledTimes(64);
    // The owner, from an address that never failed for the account, is checked at once and gets in.
    const owner = await loginFrom(t, OWNER, 'alice', alice.password);
    expect(owner.statusCode).toBe(200);
    expect(checks).toHaveBeenCalledTimes(65);
    checks.mockRestore();
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
    expectTooMany(await change(alice.password), 'old_password');
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
    expectTooMany(await registerFrom(ATTACKER, 'bot3'), 'username');
    expect(await t.countRows('users', (q) => q.where('username', '=', 'bot3'))).toBe(0);
    expect((await registerFrom(OWNER, 'carol')).statusCode).toBe(201);
  });

  test('development (the default): a client suite registering 150 users in a minute from one address passes, and asks for resets freely', async () => {
    t = await buildTestApp(
      limits({ REGISTRATIONS_PER_ADDRESS: '', RESETS_PER_ADDRESS: '', RESETS_PER_EMAIL: '' }),
    );
    expect(t.config.mode).toBe('development');
    expect(t.config.limits).toMatchObject({ registrationsPerAddress: undefined, resetsPerEmail: undefined });
    for (let i = 0; i < 150; i += 1) expect((await registerFrom(ATTACKER, `suite${i}`)).statusCode).toBe(201);
    for (let i = 0; i < 15; i += 1) {
      const asked = await t.app.inject({
        method: 'POST',
        url: '/api/tokens/reset',
        remoteAddress: ATTACKER,
        payload: { email: 'suite1@example.com' },
      });
      expect(asked.statusCode).toBe(204);
    }
  });

  test('production: the 21st registration in an hour from one address is a 429 with Retry-After and errors.json.username', async () => {
    t = await buildTestApp(production());
    expect(t.config.limits).toMatchObject({
      registrationsPerAddress: 20,
      resetsPerAddress: 10,
      resetsPerEmail: 3,
    });
    for (let i = 0; i < 20; i += 1) expect((await registerFrom(ATTACKER, `class${i}`)).statusCode).toBe(201);
    const refused = await registerFrom(ATTACKER, 'class20');
    expect(expectTooMany(refused, 'username')).toBeGreaterThan(3500);
    expect(refused.json().errors.json.username).toEqual([
      'Too many new accounts from your network: try again in 60 minutes.',
    ]);
    expect((await registerFrom(NEIGHBOUR, 'elsewhere')).statusCode).toBe(201);
  });

  test('production: the 4th reset request for one address is a 429 on errors.json.email, and a third party asking on does not restart its window', async () => {
    t = await buildTestApp(production());
    const requestFrom = (address: string) =>
      t.app.inject({
        method: 'POST',
        url: '/api/tokens/reset',
        remoteAddress: address,
        payload: { email: 'victim@example.com' },
      });
    for (let i = 0; i < 3; i += 1) expect((await requestFrom(ATTACKER)).statusCode).toBe(204);
    const first = expectTooMany(await requestFrom(ATTACKER), 'email');
    // A fixed window: requests over the limit never push its end further away.
    await sleep(1100);
    for (let i = 0; i < 5; i += 1) expectTooMany(await requestFrom(NEIGHBOUR), 'email');
    expect(expectTooMany(await requestFrom(OWNER), 'email')).toBeLessThanOrEqual(first - 1);
  });

  test('reset requests per address and per target address', async () => {
    t = await buildTestApp(limits({ RESETS_PER_ADDRESS: '2', RESETS_PER_EMAIL: '1' }));
    const requestFrom = (address: string, email: string) =>
      t.app.inject({ method: 'POST', url: '/api/tokens/reset', remoteAddress: address, payload: { email } });
    expect((await requestFrom(ATTACKER, 'alice@example.com')).statusCode).toBe(204);
    // One mail per target address an hour, whoever asks.
    expectTooMany(await requestFrom(OWNER, 'ALICE@example.com'), 'email');
    expect((await requestFrom(ATTACKER, 'bob@example.com')).statusCode).toBe(204);
    expectTooMany(await requestFrom(ATTACKER, 'carol@example.com'), 'email');
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
