import Fastify from 'fastify';
import { Type } from '@sinclair/typebox';
import { errorHandling, rejectNonFinite, requestRules } from '../../src';
import { errorHandlingOptions } from './dialect';

const RULES = { trim: false, rejectNul: true, jsonOnly: true, emptyBody: 'reject' } as const;

test('request-rules rejects a NUL character in a body and a body that is not JSON', async () => {
  const app = Fastify();
  await app.register(errorHandling, errorHandlingOptions);
  await app.register(requestRules, RULES);
  app.post('/things', { schema: { body: Type.Object({ name: Type.String() }) } }, async () => ({}));
  const nul = await app.inject({ method: 'POST', url: '/things', payload: { name: 'a\u0000b' } });
  expect(nul.statusCode).toBe(400);
  expect(nul.json().detail).toBe('name must not contain NUL characters');
  const text = await app.inject({
    method: 'POST',
    url: '/things',
    headers: { 'content-type': 'text/plain' },
    payload: 'name',
  });
  expect(text.statusCode).toBe(415);
  expect((await app.inject({ method: 'POST', url: '/things', payload: { name: 'ab' } })).statusCode).toBe(
    200,
  );
  await app.close();
});

test('rejectNonFinite refuses the query numbers Ajv coerced to Infinity', async () => {
  const app = Fastify();
  await app.register(errorHandling, errorHandlingOptions);
  const Query = Type.Object({ limit: Type.Optional(Type.Integer({ maximum: 100 })) });
  app.get('/things', { schema: { querystring: Query } }, async (request) => {
    rejectNonFinite(request.query as { limit?: number }, ['limit'], (field) => `${field} is not finite`);
    return {};
  });
  const infinite = await app.inject('/things?limit=Infinity');
  expect(infinite.statusCode).toBe(400);
  expect(infinite.json().detail).toBe('limit is not finite');
  expect((await app.inject('/things?limit=5')).statusCode).toBe(200);
  await app.close();
});
