import Fastify from 'fastify';
import { corsPlugin } from '../../src';

test('cors answers a preflight from an allowed origin, and none from another', async () => {
  const app = Fastify();
  await app.register(corsPlugin, { origins: ['http://allowed.test'] });
  app.get('/things', async () => ({}));
  const preflight = (origin: string) =>
    app.inject({
      method: 'OPTIONS',
      url: '/things',
      headers: { origin, 'access-control-request-method': 'GET' },
    });
  const allowed = await preflight('http://allowed.test');
  expect(allowed.statusCode).toBe(204);
  expect(allowed.headers['access-control-allow-origin']).toBe('http://allowed.test');
  expect(allowed.headers['access-control-max-age']).toBe('600');
  expect((await preflight('http://other.test')).headers['access-control-allow-origin']).toBeUndefined();
  await app.close();
});
