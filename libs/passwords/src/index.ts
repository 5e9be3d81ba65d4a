import { availableParallelism } from 'node:os';
import { Type, type Static, type TObject } from '@sinclair/typebox';
import { argon2id, hash, needsRehash, verify } from 'argon2';
import createError from '@fastify/error';

/**
 * OWASP's first argon2id row (Password Storage Cheat Sheet): 19 MiB, 2 passes, 1 lane. About a
 * tenth of the library's defaults (64 MiB, 3 passes, 4 lanes), and still its recommended minimum.
 */
export const OWASP_ARGON2ID = { memoryKib: 19_456, timeCost: 2, parallelism: 1 } as const;

/** argon2's own bounds: 32-bit counts, at least 8 KiB of memory per lane, at most 2^24-1 lanes. */
const ARGON2_MAX = 2 ** 32 - 1;

/**
 * Hashes at once by default: one core stays with the event loop (and libuv keeps a thread of its four
 * for files and DNS), so reads keep their latency while logins queue.
 */
export function defaultHashConcurrency(cores = availableParallelism()): number {
  return Math.max(1, Math.min(cores - 1, 3));
}

/** The environment of a service that hashes passwords; spread next to `serviceEnv(...)`. */
export function passwordHashingEnv() {
  return {
    ARGON2_MEMORY_KIB: Type.Integer({
      minimum: 8,
      maximum: ARGON2_MAX,
      default: OWASP_ARGON2ID.memoryKib,
      description: `argon2id memory per hash in KiB (OWASP: ${OWASP_ARGON2ID.memoryKib}); at least 8 per lane`,
    }),
    ARGON2_TIME_COST: Type.Integer({
      minimum: 1,
      maximum: ARGON2_MAX,
      default: OWASP_ARGON2ID.timeCost,
      description: `argon2id passes (OWASP: ${OWASP_ARGON2ID.timeCost})`,
    }),
    ARGON2_PARALLELISM: Type.Integer({
      minimum: 1,
      maximum: 16,
      default: OWASP_ARGON2ID.parallelism,
      description: `argon2id lanes (OWASP: ${OWASP_ARGON2ID.parallelism})`,
    }),
    ARGON2_CONCURRENCY: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 64,
        description: 'Hashes computed at once (default: cores - 1, at most 3); others wait their turn',
      }),
    ),
    ARGON2_QUEUE: Type.Integer({
      minimum: 0,
      maximum: 100_000,
      default: 64,
      description: 'Hashes that may wait for a turn; beyond it the request is a 503 with Retry-After',
    }),
  };
}

type PasswordHashingEnv = Static<TObject<ReturnType<typeof passwordHashingEnv>>>;

export interface PasswordHashingConfig {
  memoryKib: number;
  timeCost: number;
  parallelism: number;
  /** Hashes (and verifications) computed at once. */
  concurrency: number;
  /** Hashes that may wait; beyond it `PasswordHashingBusyError`. */
  queue: number;
}

export function passwordHashingConfig(e: PasswordHashingEnv): PasswordHashingConfig {
  if (e.ARGON2_MEMORY_KIB < 8 * e.ARGON2_PARALLELISM) {
    throw new Error(
      `invalid configuration:\n  ARGON2_MEMORY_KIB: must be at least ${8 * e.ARGON2_PARALLELISM} (8 KiB per lane, ARGON2_PARALLELISM=${e.ARGON2_PARALLELISM})`,
    );
  }
  return {
    memoryKib: e.ARGON2_MEMORY_KIB,
    timeCost: e.ARGON2_TIME_COST,
    parallelism: e.ARGON2_PARALLELISM,
    concurrency: e.ARGON2_CONCURRENCY ?? defaultHashConcurrency(),
    queue: e.ARGON2_QUEUE,
  };
}

/**
 * Every hashing slot is taken and the queue is full: the caller should come back shortly. A 503
 * that says so (with Retry-After), not "database unreachable": the database is fine. A plain
 * `@fastify/error` with statusCode 503, so any Fastify error handler (http-kit's adds Retry-After to
 * every 503) answers it without this lib knowing the HTTP kit.
 */
export const PasswordHashingBusyError = createError(
  'PLATFORM_HASHING_BUSY',
  'Too many password checks are waiting; try again in a few seconds',
  503,
);

/**
 * Who waits first for a hashing slot: `first` (a client with no recent failure: the owner of an
 * account logging in, a new registration) before `later` (a client that has failed already: what a
 * password-guessing storm becomes after its first attempt).
 */
export type HashPriority = 'first' | 'later';

/**
 * At most `concurrency` tasks at once, at most `queue` waiting (FIFO within a priority, `first`
 * before `later`); one more is refused.
 */
function boundedGate(concurrency: number, queue: number) {
  let active = 0;
  const lanes: Record<HashPriority, (() => void)[]> = { first: [], later: [] };
  const waitingCount = () => lanes.first.length + lanes.later.length;
  const release = () => {
    const next = lanes.first.shift() ?? lanes.later.shift();
    if (next) next();
    else active -= 1;
  };
  return {
    async run<T>(task: () => Promise<T>, priority: HashPriority = 'first'): Promise<T> {
      if (active < concurrency) active += 1;
      else if (waitingCount() < queue) await new Promise<void>((resolve) => lanes[priority].push(resolve));
      else throw new PasswordHashingBusyError();
      try {
        return await task();
      } finally {
        release();
      }
    },
    get active() {
      return active;
    },
    get waiting() {
      return waitingCount();
    },
  };
}

export interface PasswordCheck {
  ok: boolean;
  /** A hash of the same password at today's parameters, when the stored one used others. */
  upgradedHash?: string;
}

/**
 * argon2id hashing with a bounded number of hashes at once (the library runs each on libuv's thread
 * pool; the bound keeps a core for the event loop) and a bounded queue (503 beyond it). Checking a
 * password for an account that has none still costs one verification against a decoy, so the time
 * taken does not tell which names exist. A stored hash made with other parameters still verifies and
 * comes back re-hashed at today's, for the caller to store.
 */
export function createPasswordHasher(config: PasswordHashingConfig) {
  const options = {
    type: argon2id,
    memoryCost: config.memoryKib,
    timeCost: config.timeCost,
    parallelism: config.parallelism,
  } as const;
  const gate = boundedGate(config.concurrency, config.queue);
  let decoy: Promise<string> | undefined;
  const hashNow = (password: string) => hash(password, options);
  const outdated = (stored: string) => {
    try {
      return needsRehash(stored, options);
    } catch {
      return false;
    }
  };

  return {
    config,
    hash: (password: string, priority?: HashPriority): Promise<string> =>
      gate.run(() => hashNow(password), priority),
    /**
     * Checks a password; `upgradedHash` when it matched a hash made with other parameters. `later`
     * for a client that has failed recently: clients that have not are checked before it.
     */
    check: (
      stored: string | null | undefined,
      password: string,
      priority?: HashPriority,
    ): Promise<PasswordCheck> =>
      gate.run(async () => {
        if (!stored) {
          decoy ??= hashNow('decoy password');
          await verify(await decoy, password).catch(() => false);
          return { ok: false };
        }
        const ok = await verify(stored, password).catch(() => false);
        if (!ok || !outdated(stored)) return { ok };
        return { ok, upgradedHash: await hashNow(password) };
      }, priority),
    /** Hashes running and waiting now (metrics and tests). */
    load: () => ({ active: gate.active, waiting: gate.waiting }),
  };
}

export type PasswordHasher = ReturnType<typeof createPasswordHasher>;
