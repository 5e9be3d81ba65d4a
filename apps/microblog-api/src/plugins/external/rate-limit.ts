import fp from 'fastify-plugin';
import rateLimit from '@fastify/rate-limit';
import type { onRequestHookHandler } from 'fastify';

declare module 'fastify' {
  interface FastifyInstance {
    /** One budget per client address shared by every write route (the contract's write rate limit). */
    writeRateLimit: onRequestHookHandler;
  }
}

export default fp(
  async function writeRateLimitPlugin(app, { perMinute }: { perMinute: number }) {
    await app.register(rateLimit, { global: false });
    // One hook instance (and so one counter store) used by all write routes.
    app.decorate(
      'writeRateLimit',
      app.rateLimit({ max: perMinute, timeWindow: 60_000, keyGenerator: (req) => req.ip }),
    );
  },
  { name: 'write-rate-limit' },
);
