import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { HashPriority } from '@platform/http-kit';
import { TooManyRequests } from '../errors';
import type { Config } from '../config';

const HOUR_MS = 3_600_000;

/** One limit: `allow` counts an attempt, `peek` only looks, `spend` counts one that was made. */
function limiter(
  app: FastifyInstance,
  max: number,
  timeWindow: number,
  key: (request: FastifyRequest) => string,
) {
  // continueExceeding: while a client keeps trying over the limit the window restarts, so its wait
  // grows with its persistence; one that stops is free again one window later (never a hard lock).
  // (`continueExceeding` is a plugin option the limiter honours; its type omits it for createRateLimit.)
  const options = { max, timeWindow, keyGenerator: key, continueExceeding: true };
  const check = app.createRateLimit(options);
  return {
    /** Counts this attempt; throws a 429 (with Retry-After) when it is over the limit. */
    async allow(request: FastifyRequest, reply: FastifyReply): Promise<void> {
      const state = await check(request);
      if (!state.isAllowed && state.isExceeded) throw refuse(reply, state.ttlInSeconds);
    },
    /**
     * Throws a 429 when the limit is already reached, counting the refused attempt; counts nothing
     * otherwise. Whether anything was counted in the window (a clean client's checks go first).
     */
    async peek(request: FastifyRequest, reply: FastifyReply): Promise<{ clean: boolean }> {
      const state = await check(request, { increment: false });
      if (state.isAllowed) return { clean: true };
      if (state.remaining <= 0) {
        const counted = await check(request);
        throw refuse(reply, counted.isAllowed ? 1 : counted.ttlInSeconds);
      }
      return { clean: state.remaining >= max };
    },
    /** Counts a failed attempt. */
    async spend(request: FastifyRequest): Promise<void> {
      await check(request);
    },
  };
}

function refuse(reply: FastifyReply, retryAfterSeconds: number) {
  reply.header('retry-after', String(Math.max(1, retryAfterSeconds)));
  return new TooManyRequests();
}

/**
 * The limits of the routes that hash a password or send mail, on the platform's rate-limit store
 * (Redis with REDIS_URL, shared by replicas). Logins: only failures count, per client address and per
 * account *from that address*, so an attacker elsewhere cannot lock the owner out; a correct password
 * from an address under its limits always works. Registrations and reset requests: per address, and
 * reset mails per target address.
 */
export function createAuthLimits(app: FastifyInstance, limits: Config['limits']) {
  const window = limits.loginWindowMs;
  const failuresByAddress = limiter(app, limits.loginFailuresPerAddress, window, (r) => `login:${r.ip}`);
  const failuresByAccount = limiter(
    app,
    limits.loginFailuresPerAccount,
    window,
    (r) => `login-account:${r.ip}:${accountKey(r)}`,
  );
  return {
    /**
     * Before a login is checked: 429 when this address, or this account from it, failed too often.
     * Otherwise the priority of its password check: an address without a failure in the window
     * (the owner logging in) is checked before one that has failed (a guessing storm).
     */
    async beforeLogin(request: FastifyRequest, reply: FastifyReply, account: string): Promise<HashPriority> {
      request.loginAccount = account;
      const address = await failuresByAddress.peek(request, reply);
      await failuresByAccount.peek(request, reply);
      return address.clean ? 'first' : 'later';
    },
    async loginFailed(request: FastifyRequest): Promise<void> {
      await Promise.all([failuresByAddress.spend(request), failuresByAccount.spend(request)]);
    },
    registration: limiter(app, limits.registrationsPerAddress, HOUR_MS, (r) => `register:${r.ip}`),
    resetByAddress: limiter(app, limits.resetsPerAddress, HOUR_MS, (r) => `reset:${r.ip}`),
    resetByEmail: limiter(app, limits.resetsPerEmail, HOUR_MS, (r) => `reset-email:${accountKey(r)}`),
  };
}

/** The account a login or reset names, case-folded (usernames and addresses match case-insensitively). */
function accountKey(request: FastifyRequest): string {
  return (request.loginAccount ?? '').trim().toLowerCase();
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The account a login or reset request names (set before its limits are checked). */
    loginAccount?: string;
  }
}

export type AuthLimits = ReturnType<typeof createAuthLimits>;
