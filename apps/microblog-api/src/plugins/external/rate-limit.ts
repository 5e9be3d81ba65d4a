import fp from 'fastify-plugin';
import type { FastifyRequest, onRequestHookHandler } from 'fastify';
import type { WriteLimits } from '../../config';
import { WriteLimitError } from '../../errors';

declare module 'fastify' {
  interface FastifyInstance {
    /** The write limits shared by every write route (post, reply, reaction): see below. */
    writeRateLimit: onRequestHookHandler;
  }
}

/**
 * The write limits, on the platform's rate-limit store (createServiceApp): in this process's memory,
 * or in Redis with `REDIS_URL`, where every replica counts against the same budgets.
 *
 * A write carrying a valid client id (the panel's cookie) counts against its browser's budget and
 * against the ceiling of its address, which all the browsers of one address share (a classroom
 * behind one router); a write without one (a script, curl, a forged cookie) counts against the
 * stricter budget of its address for such writes. Reads are never limited.
 */
export default fp(
  async function writeRateLimitPlugin(app, limits: WriteLimits) {
    const clientIdOf = new WeakMap<FastifyRequest, string>();
    const limiter = (max: number, key: (request: FastifyRequest) => string) =>
      app.createRateLimit({ max, timeWindow: limits.windowMs, keyGenerator: key });
    const perClient = limiter(limits.perClient, (r) => `write:client:${clientIdOf.get(r)}`);
    const perAddress = limiter(limits.perAddress, (r) => `write:address:${r.ip}`);
    const withoutClientId = limiter(limits.withoutClientId, (r) => `write:anonymous:${r.ip}`);

    const checks = {
      // The browser's own budget first: a browser over it does not use up its room's ceiling.
      withClientId: [
        [perClient, 'from this browser'],
        [perAddress, 'from this network address (all its browsers together)'],
      ],
      withoutClientId: [[withoutClientId, 'without the panel’s client id from this address']],
    } as const;

    app.decorate('writeRateLimit', async function writeRateLimit(request, reply) {
      const clientId = await app.clientIds.of(request);
      if (clientId) clientIdOf.set(request, clientId);
      for (const [limit, scope] of clientId ? checks.withClientId : checks.withoutClientId) {
        const outcome = await limit(request);
        // Allowed, or the store unreachable (skipOnError: the limit is skipped, logged by the store).
        if (outcome.isAllowed || !outcome.isExceeded) continue;
        const seconds = Math.max(1, outcome.ttlInSeconds);
        reply.header('retry-after', String(seconds));
        throw new WriteLimitError(scope, seconds);
      }
    } satisfies onRequestHookHandler);
  },
  { name: 'write-rate-limit', dependencies: ['platform-rate-limit-store', 'client-id'] },
);
