import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { HashPriority } from '@platform/passwords';
import {
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
  type RateLimiterAbstract,
} from 'rate-limiter-flexible';
import { throttled } from '../errors';
import type { Config } from '../config';

const HOUR_S = 3600;
/** How long lockouts in a row are remembered (each doubles the next one's wait). */
const STRIKE_MEMORY_S = 24 * HOUR_S;
/** The first delay of an address failing for an account that failed too often from everywhere. */
const FIRST_SPREAD_DELAY_S = 1;

/**
 * Counters on rate-limiter-flexible: in Redis with REDIS_URL (shared by every replica), in the process
 * otherwise. The Redis connection is the platform rate-limit store's (`app.rateLimitRedis`): one
 * connection per process, whose start-up waits for Redis (so the first logins already count there),
 * whose warnings come once per interval, and which closes with the app. While Redis cannot be reached
 * its commands fail at once and each process counts alone (the insurance limiter), so a login never
 * fails because Redis is down and the failed-login limits still hold per process (the platform's own
 * limits are skipped instead: these guard passwords, which must stay limited everywhere).
 * Consuming is one atomic step (Redis INCR), so concurrent attempts each get their own number.
 */
function counterMaker(app: FastifyInstance) {
  const redis = app.rateLimitRedis;
  return (name: string, points: number, durationSeconds: number): RateLimiterAbstract => {
    const options = { keyPrefix: `social-limits:${name}`, points, duration: durationSeconds };
    const memory = new RateLimiterMemory(options);
    return redis
      ? new RateLimiterRedis({ ...options, storeClient: redis, insuranceLimiter: memory })
      : memory;
  };
}
type MakeCounter = ReturnType<typeof counterMaker>;

/** Counts one attempt: its number in the window, and whether it is over the limit (then not allowed). */
async function take(
  counter: RateLimiterAbstract,
  key: string,
): Promise<{ res: RateLimiterRes; over: boolean }> {
  try {
    return { res: await counter.consume(key), over: false };
  } catch (error) {
    if (error instanceof RateLimiterRes) return { res: error, over: true };
    throw error;
  }
}

const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

/** Retry-After, then the 429 with one sentence on `field` (see `throttled`). */
function refuse(reply: FastifyReply, field: string, what: string, waitSeconds: number) {
  reply.header('retry-after', String(waitSeconds));
  return throttled(field, what, waitSeconds);
}

/**
 * Failures per window for one kind of key; `max` failures lock the key for a wait that doubles with
 * each lockout in a row (the first lasts one window; capped). Every attempt is counted before it is
 * checked and refunded when it succeeds, so concurrent attempts get at most `max` checks. Looking at
 * a lock never extends it: the wait announced is the wait served, however often the client asks.
 */
function lockout(make: MakeCounter, name: string, max: number, windowS: number, maxWaitS: number) {
  const failures = make(name, max, windowS);
  const strikes = make(`${name}-strikes`, Number.MAX_SAFE_INTEGER, STRIKE_MEMORY_S);
  return {
    /** Seconds until `key` may try again; 0 when it may now. */
    async waitSeconds(key: string): Promise<number> {
      const state = await failures.get(key);
      return state && state.consumedPoints > max ? seconds(state.msBeforeNext) : 0;
    },
    /** Counts an attempt before its check: its number, or the wait when it is over the limit. */
    async reserve(key: string): Promise<{ number: number; waitSeconds: number }> {
      const { res, over } = await take(failures, key);
      return { number: res.consumedPoints, waitSeconds: over ? seconds(res.msBeforeNext) : 0 };
    },
    /** The attempt was not checked after all (another limit refused it): it does not count. */
    async refund(key: string): Promise<void> {
      await failures.reward(key, 1);
    },
    /** The attempt succeeded: it does not count, and lockouts in a row start over. */
    async succeeded(key: string): Promise<void> {
      await Promise.all([failures.reward(key, 1), strikes.delete(key)]);
    },
    /** The attempt numbered `number` failed: the one that filled the window locks the key. */
    async failed(key: string, number: number): Promise<void> {
      if (number !== max) return;
      const strike = (await strikes.consume(key)).consumedPoints;
      await failures.block(key, Math.min(windowS * 2 ** Math.min(strike - 1, 30), maxWaitS));
    },
  };
}

/** A fixed-window count per key (never restarted by attempts over it): 429 with Retry-After when over. */
function perHour(make: MakeCounter, name: string, max: number | undefined, field: string, what: string) {
  const counter = max === undefined ? undefined : make(name, max, HOUR_S);
  return {
    async allow(key: string, reply: FastifyReply): Promise<void> {
      if (!counter) return;
      const { res, over } = await take(counter, key);
      if (over) throw refuse(reply, field, what, seconds(res.msBeforeNext));
    },
  };
}

/** One login attempt in progress: its hashing priority, then exactly one of `succeeded` / `failed`. */
export interface LoginAttempt {
  priority: HashPriority;
  succeeded(): Promise<void>;
  failed(): Promise<void>;
}

/**
 * The limits of the routes that check or hash a password or send mail.
 *
 * Logins (and a password change's old password): failures are limited everywhere, per client
 * address and per account from one address; over either, the address (or the account from it) is
 * locked for one window, the next lockout in a row for twice as long, and so on (LOGIN_MAX_WAIT_SECONDS
 * at most); a lock ends on its own however often the client asks. Across addresses an account has
 * a further budget (LOGIN_FAILURES_PER_ACCOUNT_ANYWHERE an hour); beyond it every further failure
 * makes its own address wait before trying that account again, 1 s and doubling with each failure.
 * Only addresses that have themselves failed for the account ever wait for it, so the owner's right
 * password from a clean address is checked at once, and nobody can lock the owner out from elsewhere.
 *
 * Registrations and reset requests: per address (and reset mails per target address) an hour, fixed
 * windows; off unless configured (production's defaults, see config.ts).
 */
export function createAuthLimits(app: FastifyInstance, limits: Config['limits']) {
  const make = counterMaker(app);
  const windowS = limits.loginWindowSeconds;
  const maxWaitS = limits.loginMaxWaitSeconds;
  const byAddress = lockout(make, 'login-address', limits.loginFailuresPerAddress, windowS, maxWaitS);
  const byAccountFromAddress = lockout(
    make,
    'login-account',
    limits.loginFailuresPerAccount,
    windowS,
    maxWaitS,
  );
  const anywhere = limits.loginFailuresPerAccountAnywhere;
  const byAccount = make('login-account-anywhere', Number.MAX_SAFE_INTEGER, HOUR_S);
  // An address that failed for an account (key: address and account) waits this long before its next try.
  // (Only ever blocked, which stores points + 1 = 2.)
  const spreadDelay = make('login-spread-delay', 1, 1);

  return {
    /**
     * Before a password is checked: 429 (on `field`) while this address, or this account from it,
     * must wait; otherwise the attempt is counted at once (so concurrent guesses get at most the
     * limit's number of checks) and its hashing priority says whether the address was clean (the
     * owner logging in is checked before a guessing storm).
     */
    async beginLogin(
      request: FastifyRequest,
      reply: FastifyReply,
      account: string,
      field: string,
    ): Promise<LoginAttempt> {
      // Usernames and addresses match case-insensitively: one account, one key.
      const accountKey = account.trim().toLowerCase();
      const address = request.ip;
      const pair = `${address}:${accountKey}`;
      const what = 'Too many failed logins';
      const delayed = await spreadDelay.get(pair);
      const waiting = Math.max(
        await byAddress.waitSeconds(address),
        await byAccountFromAddress.waitSeconds(pair),
        delayed && delayed.consumedPoints > 1 ? seconds(delayed.msBeforeNext) : 0,
      );
      if (waiting > 0) throw refuse(reply, field, what, waiting);
      const first = await byAddress.reserve(address);
      const second = await byAccountFromAddress.reserve(pair);
      if (first.waitSeconds || second.waitSeconds) {
        // Over a limit: this attempt is not checked, and what it reserved elsewhere is given back.
        if (!first.waitSeconds) await byAddress.refund(address);
        if (!second.waitSeconds) await byAccountFromAddress.refund(pair);
        throw refuse(reply, field, what, Math.max(first.waitSeconds, second.waitSeconds));
      }
      return {
        priority: first.number === 1 ? 'first' : 'later',
        async succeeded() {
          await Promise.all([byAddress.succeeded(address), byAccountFromAddress.succeeded(pair)]);
        },
        async failed() {
          await byAddress.failed(address, first.number);
          await byAccountFromAddress.failed(pair, second.number);
          const count = (await byAccount.consume(accountKey)).consumedPoints;
          if (count > anywhere) {
            const delay = FIRST_SPREAD_DELAY_S * 2 ** Math.min(count - anywhere - 1, 30);
            await spreadDelay.block(pair, Math.min(delay, maxWaitS));
          }
        },
      };
    },
    registration: perHour(
      make,
      'register',
      limits.registrationsPerAddress,
      'username',
      'Too many new accounts from your network',
    ),
    resetByAddress: perHour(
      make,
      'reset',
      limits.resetsPerAddress,
      'email',
      'Too many password reset requests from your network',
    ),
    resetByEmail: perHour(
      make,
      'reset-email',
      limits.resetsPerEmail,
      'email',
      'Too many password reset requests for this address',
    ),
  };
}

export type AuthLimits = ReturnType<typeof createAuthLimits>;
