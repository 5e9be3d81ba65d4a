import Fastify from 'fastify';
import { requestId, serverOptions } from '../../src';

test("request-id names every answer's request: the caller's sane id, or a new one", async () => {
  const app = Fastify(serverOptions({ logLevel: 'silent' }));
  await app.register(requestId);
  app.get('/things', async () => ({}));
  expect(
    (await app.inject({ url: '/things', headers: { 'x-request-id': 'abc-123' } })).headers['x-request-id'],
  ).toBe('abc-123');
  const fresh = (await app.inject({ url: '/things', headers: { 'x-request-id': 'no spaces allowed' } }))
    .headers;
  expect(fresh['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  await app.close();
});
