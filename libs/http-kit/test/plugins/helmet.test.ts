import Fastify from 'fastify';
import { helmetPlugin, SECURITY_HEADERS } from '../../src';

test("helmet's headers are on every routed answer", async () => {
  const app = Fastify();
  await app.register(helmetPlugin);
  app.get('/things', async () => ({}));
  const res = await app.inject('/things');
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) expect(res.headers[name]).toBe(value);
  expect(res.headers['x-content-type-options']).toBe('nosniff');
  await app.close();
});
