import fp from 'fastify-plugin';
import type { onRequestHookHandler } from 'fastify';

declare module 'fastify' {
  interface FastifyInstance {
    /** One budget per client address shared by every write route (the contract's write rate limit). */
    writeRateLimit: onRequestHookHandler;
  }
}

/**
 * The write limit on the platform's rate-limit store (createServiceApp): in this process's memory,
 * or in Redis with `REDIS_URL`, where every replica counts against the same budget.
 */
export default fp(
  async function writeRateLimitPlugin(app, { perMinute }: { perMinute: number }) {
    // One hook instance (and so one counter) used by all write routes.
    app.decorate(
      'writeRateLimit',
      app.rateLimit({ max: perMinute, timeWindow: 60_000, keyGenerator: (req) => req.ip }),
    );
  },
  { name: 'write-rate-limit', dependencies: ['platform-rate-limit-store'] },
);
