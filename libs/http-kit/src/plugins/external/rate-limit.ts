// Kept in the declaration output, so every service sees `app.rateLimit` / `app.createRateLimit`.
/// <reference types="@fastify/rate-limit" preserve="true" />
import fp from 'fastify-plugin';
import rateLimit from '@fastify/rate-limit';
import { Redis } from 'ioredis';

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * The rate-limit store's Redis connection (null without a Redis URL), for a service's own counters
     * in the same Redis: they share its start-up wait, its once-per-interval warnings and its close.
     * It fails commands at once while disconnected (no offline queue); never close it yourself.
     */
    rateLimitRedis: Redis | null;
  }
}

export interface RateLimitStoreOptions {
  /** Redis shared by every replica; unset: each process keeps its own counters in memory. */
  redisUrl?: string;
  /** Prefix of this service's keys in a shared Redis (one Redis can serve several services). */
  namespace: string;
}

/** How long start-up waits for Redis (replicas starting together on a busy machine need a few seconds). */
const REDIS_CONNECT_TIMEOUT_MS = 5_000;

/** Longest wait for the socket to end on close (Redis answers within milliseconds, or not at all). */
const REDIS_DISCONNECT_TIMEOUT_MS = 200;

/** How long a dead Redis is reported as one warning rather than one per reconnect attempt. */
const REDIS_WARNING_INTERVAL_MS = 30_000;

/**
 * `@fastify/rate-limit` registered once per service with no global limit: a route or a service plugin
 * takes its own limit from `app.rateLimit(...)` or `app.createRateLimit(...)`. With a Redis URL the
 * counters live in Redis, so N replicas enforce one limit together; without it they live in memory.
 * A Redis that cannot be reached does not take the service down: the limit is skipped (logged), the
 * same choice as when a cache is lost, while bounded work (password hashing, body sizes, timeouts)
 * still protects the process.
 */
export const rateLimitStore = fp(
  async function rateLimitStorePlugin(app, options: RateLimitStoreOptions) {
    let redis: Redis | undefined;
    if (options.redisUrl) {
      redis = new Redis(options.redisUrl, {
        // Fail a command at once while disconnected (the limit is then skipped), never queue requests.
        enableOfflineQueue: false,
        maxRetriesPerRequest: 1,
        connectTimeout: REDIS_CONNECT_TIMEOUT_MS,
        commandTimeout: 500,
        // How long a closing connection may take to end its socket. ioredis arms this timer even when
        // the socket is already gone (Redis down): the default 2 s then keeps a closed app's process
        // (or Jest) alive after everything else has ended.
        disconnectTimeout: REDIS_DISCONNECT_TIMEOUT_MS,
      });
      let lastWarning = 0;
      redis.on('error', (err: Error) => {
        const now = Date.now();
        if (now - lastWarning < REDIS_WARNING_INTERVAL_MS) return;
        lastWarning = now;
        app.log.warn(
          { err },
          'rate-limit Redis unreachable; limits kept in Redis are skipped (or counted per process) until it is back',
        );
      });
      redis.on('ready', () => app.log.info('rate-limit counters in Redis'));
      const connection = redis;
      app.addHook('onClose', async () => {
        connection.disconnect();
      });
      // Limits count from the first request: start-up waits for Redis, at most the connect timeout
      // (then the service starts anyway and the limits apply once Redis answers).
      // (Connection errors meanwhile are only logged: ioredis keeps reconnecting.)
      const ready = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), REDIS_CONNECT_TIMEOUT_MS);
        connection.once('ready', () => {
          clearTimeout(timer);
          resolve(true);
        });
      });
      if (!ready)
        app.log.warn(
          'rate-limit Redis not reachable at start; limits kept in Redis are skipped (or counted per process) until it is',
        );
    }
    app.decorate('rateLimitRedis', redis ?? null);
    await app.register(rateLimit, {
      global: false,
      redis,
      nameSpace: `${options.namespace}:rate-limit:`,
      skipOnError: true,
    });
  },
  // Services name it in their plugins' dependencies.
  { name: 'platform-rate-limit-store', fastify: '5.x' },
);
