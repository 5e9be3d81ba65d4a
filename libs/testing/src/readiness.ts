import type { FastifyInstance } from 'fastify';

/** Polls the service's /readyz until it answers 200 (true) or the time is up (false). */
export async function waitUntilReady(app: FastifyInstance, timeoutMs = 15_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if ((await app.inject('/readyz')).statusCode === 200) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, 200));
  }
}
