import Fastify from 'fastify';
import { rateLimitStore } from '../../src';

test('the rate-limit store limits only the routes that ask for a limit (in memory without Redis)', async () => {
  const app = Fastify();
  await app.register(rateLimitStore, { namespace: 'test' });
  expect(app.rateLimitRedis).toBeNull();
  app.get('/limited', { config: { rateLimit: { max: 1, timeWindow: 60_000 } } }, async () => ({}));
  app.get('/open', async () => ({}));
  expect((await app.inject('/limited')).statusCode).toBe(200);
  expect((await app.inject('/limited')).statusCode).toBe(429);
  for (let i = 0; i < 3; i++) expect((await app.inject('/open')).statusCode).toBe(200);
  await app.close();
});
