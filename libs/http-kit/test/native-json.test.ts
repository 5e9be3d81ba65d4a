import Fastify from 'fastify';
import { nativeJson } from '../src/native-json';

/** A route's response schema, as TypeBox writes one. */
const Note = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    text: { type: 'string' },
    tags: { type: 'array', items: { type: 'string' } },
  },
} as const;

const note = { id: 7, text: 'quotes " \\ , controls \u0001\t\n, \u2028, é, 😀, </script>', tags: ['a'] };

describe('nativeJson', () => {
  const app = Fastify();
  const schema = { response: { 200: Note } };
  app.get('/schema', { schema }, async () => note);
  app.get('/native', { schema }, async (_request, reply) => nativeJson(reply, note));
  // What the bypass gives up: the schema's serialiser would drop the extra property.
  app.get('/native-extra', { schema }, async (_request, reply) =>
    nativeJson(reply, { ...note, secret: 'h' }),
  );
  afterAll(() => app.close());

  test('a value holding exactly its schema: the same bytes and type as the schema serialiser', async () => {
    const viaSchema = await app.inject('/schema');
    const native = await app.inject('/native');
    expect(native.statusCode).toBe(200);
    expect(native.body).toBe(viaSchema.body);
    expect(native.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(native.headers['content-type']).toBe(viaSchema.headers['content-type']);
  });

  test('the response schema no longer shapes the body: an extra property is sent', async () => {
    expect((await app.inject('/schema')).json()).not.toHaveProperty('secret');
    expect((await app.inject('/native-extra')).json()).toHaveProperty('secret', 'h');
  });
});
