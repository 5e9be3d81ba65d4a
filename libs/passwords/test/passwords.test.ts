/**
 * The shared argon2id hasher: OWASP's parameters by default, a bound on hashes at once with a bounded
 * queue (then PasswordHashingBusyError, a 503), decoy verification, re-hashing of outdated hashes.
 */
import { Type } from '@sinclair/typebox';
import { parseEnv } from '@platform/schema';
import {
  createPasswordHasher,
  defaultHashConcurrency,
  OWASP_ARGON2ID,
  passwordHashingConfig,
  passwordHashingEnv,
  PasswordHashingBusyError,
  type PasswordHashingConfig,
} from '../src';

const cheap = (overrides: Partial<PasswordHashingConfig> = {}): PasswordHashingConfig => ({
  memoryKib: 64,
  timeCost: 1,
  parallelism: 1,
  concurrency: 1,
  queue: 10,
  ...overrides,
});

const configFrom = (env: Record<string, string>) =>
  passwordHashingConfig(parseEnv(Type.Object(passwordHashingEnv()), env));

describe('configuration', () => {
  test("defaults are OWASP's argon2id row and a concurrency that leaves a core to the event loop", () => {
    expect(configFrom({})).toEqual({
      memoryKib: 19_456,
      timeCost: 2,
      parallelism: 1,
      concurrency: defaultHashConcurrency(),
      queue: 64,
    });
    expect(OWASP_ARGON2ID).toEqual({ memoryKib: 19_456, timeCost: 2, parallelism: 1 });
    expect([1, 2, 4, 8, 64].map((cores) => defaultHashConcurrency(cores))).toEqual([1, 1, 3, 3, 3]);
  });

  test('upwards is allowed; memory under 8 KiB a lane is refused at start, naming the variable', () => {
    expect(
      configFrom({ ARGON2_MEMORY_KIB: '65536', ARGON2_TIME_COST: '3', ARGON2_PARALLELISM: '4' }),
    ).toMatchObject({
      memoryKib: 65536,
      timeCost: 3,
      parallelism: 4,
    });
    expect(() => configFrom({ ARGON2_MEMORY_KIB: '31', ARGON2_PARALLELISM: '4' })).toThrow(
      /ARGON2_MEMORY_KIB/,
    );
    expect(() => configFrom({ ARGON2_CONCURRENCY: '0' })).toThrow(/ARGON2_CONCURRENCY/);
  });
});

describe('hashing and checking', () => {
  test('a hash at the configured parameters checks against its password only', async () => {
    const hasher = createPasswordHasher(cheap());
    const stored = await hasher.hash('correct horse');
    expect(stored).toMatch(/^\$argon2id\$v=19\$m=64,t=1,p=1\$/);
    expect(await hasher.check(stored, 'correct horse')).toEqual({ ok: true });
    expect(await hasher.check(stored, 'battery staple')).toEqual({ ok: false });
  });

  test('no stored hash (no such user, no password) is false after a decoy verification', async () => {
    const hasher = createPasswordHasher(cheap());
    expect(await hasher.check(undefined, 'anything')).toEqual({ ok: false });
    expect(await hasher.check(null, 'anything')).toEqual({ ok: false });
    expect(await hasher.check('not a hash', 'anything')).toEqual({ ok: false });
  });

  test('a hash with other parameters verifies and comes back re-hashed at today’s; a wrong password does not', async () => {
    const old = createPasswordHasher(cheap({ memoryKib: 32, parallelism: 2 }));
    const today = createPasswordHasher(cheap({ memoryKib: 128, timeCost: 2 }));
    const stored = await old.hash('pw');
    expect(await today.check(stored, 'wrong')).toEqual({ ok: false });
    const checked = await today.check(stored, 'pw');
    expect(checked.ok).toBe(true);
    expect(checked.upgradedHash).toMatch(/^\$argon2id\$v=19\$m=128,t=2,p=1\$/);
    expect(await today.check(checked.upgradedHash!, 'pw')).toEqual({ ok: true });
  });
});

describe('bounded work', () => {
  test('at most `concurrency` at once, the rest wait in order; every one completes', async () => {
    const hasher = createPasswordHasher(cheap({ memoryKib: 8192, concurrency: 2, queue: 10 }));
    const pending = Array.from({ length: 6 }, (_, i) => hasher.hash(`pw${i}`));
    expect(hasher.load()).toEqual({ active: 2, waiting: 4 });
    const hashes = await Promise.all(pending);
    expect(new Set(hashes).size).toBe(6);
    expect(hasher.load()).toEqual({ active: 0, waiting: 0 });
  });

  test('beyond the queue a PasswordHashingBusyError (503); the gate recovers', async () => {
    const hasher = createPasswordHasher(cheap({ memoryKib: 8192, concurrency: 1, queue: 2 }));
    const results = await Promise.allSettled(Array.from({ length: 5 }, () => hasher.hash('pw')));
    expect(results.map((r) => r.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'rejected',
      'rejected',
    ]);
    const refused = results[3] as PromiseRejectedResult;
    expect(refused.reason).toBeInstanceOf(PasswordHashingBusyError);
    expect(refused.reason.statusCode).toBe(503);
    expect(hasher.load()).toEqual({ active: 0, waiting: 0 });
    await expect(hasher.hash('pw')).resolves.toMatch(/^\$argon2id\$/);
  });

  test("'first' waiters (clients without a recent failure) go before 'later' ones, FIFO within each", async () => {
    const hasher = createPasswordHasher(cheap({ memoryKib: 8192, concurrency: 1, queue: 10 }));
    const finished: string[] = [];
    const track = (label: string, work: Promise<unknown>) => work.then(() => finished.push(label));
    const all = [
      track('running', hasher.hash('pw', 'later')),
      track('later-1', hasher.hash('pw', 'later')),
      track('later-2', hasher.hash('pw', 'later')),
      track('first-1', hasher.hash('pw', 'first')),
      track('later-3', hasher.check(null, 'pw', 'later')),
      track('first-2', hasher.check(null, 'pw')),
    ];
    expect(hasher.load()).toEqual({ active: 1, waiting: 5 });
    await Promise.all(all);
    expect(finished).toEqual(['running', 'first-1', 'first-2', 'later-1', 'later-2', 'later-3']);
  });

  test('a failing hash frees its slot', async () => {
    const hasher = createPasswordHasher(cheap({ concurrency: 1, queue: 0 }));
    // argon2 refuses a non-string password: the task fails, the slot is released.
    await expect(hasher.hash(undefined as unknown as string)).rejects.toThrow();
    expect(hasher.load()).toEqual({ active: 0, waiting: 0 });
    await expect(hasher.hash('pw')).resolves.toMatch(/^\$argon2id\$/);
  });
});
