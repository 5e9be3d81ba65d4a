import Fastify from 'fastify';
import { Type } from '@sinclair/typebox';
import { swaggerPlugin } from '../../src';

test('swagger serves the OpenAPI document of the routes at /docs/json and Swagger UI at /docs', async () => {
  const app = Fastify();
  await app.register(swaggerPlugin, {
    title: 'things',
    description: 'd',
    version: '1',
    tags: [{ name: 'things', description: 'Things' }],
  });
  app.get('/things', { schema: { tags: ['things'], response: { 200: Type.Object({}) } } }, async () => ({}));
  const doc = (await app.inject('/docs/json')).json();
  expect(doc.info).toEqual({ title: 'things', description: 'd', version: '1' });
  expect(doc.tags.map((t: { name: string }) => t.name)).toEqual(['things', 'ops']);
  expect(doc.paths['/things'].get.responses['200']).toBeDefined();
  const ui = await app.inject('/docs/');
  expect(ui.statusCode).toBe(200);
  expect(ui.headers['content-type']).toMatch(/text\/html/);
  await app.close();
});
