import Fastify, { type FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { StringEnum, TrimmedText } from '@platform/schema';
import { platform, serverOptions } from '@platform/http-kit';
import { kasmDialect } from '../src/errors';

/**
 * The service's error dialect on its own (Kasm's one `error_message`), over the platform's one error
 * path: a bare app with one route. The service's own request rules, 404 wording and operations are
 * tested through its app (client-compat.test.ts and the others).
 */
async function dialectProbe(): Promise<FastifyInstance> {
  const app = Fastify(serverOptions({ logLevel: 'silent', bodyLimit: 1024 }));
  await app.register(platform, {
    dialect: kasmDialect,
    requestRules: { trim: true, rejectNul: true, jsonOnly: true, emptyBody: 'reject' },
    readiness: async () => undefined,
    isUnavailable: (e) => (e as { code?: string }).code === 'ECONNREFUSED',
    bodyLimit: 1024,
    docs: { title: 'probe', description: 'd', version: '0', tags: [] },
    cors: { origins: [] },
  });
  app.post(
    '/things',
    {
      schema: {
        body: Type.Object(
          {
            name: TrimmedText({ min: 2, max: 5 }),
            kind: StringEnum(['a', 'b'] as const),
            count: Type.Optional(Type.Integer({ minimum: 1, maximum: 9 })),
          },
          { additionalProperties: false },
        ),
      },
    },
    async (request, reply) => reply.status(201).send({ name: (request.body as { name: string }).name }),
  );
  app.get('/down', async () => {
    throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
  });
  await app.ready();
  return app;
}

describe("the error dialect: Kasm's one error_message", () => {
  let kasm: FastifyInstance;
  beforeAll(async () => {
    kasm = await dialectProbe();
  });
  afterAll(() => kasm?.close());

  test('validation failures: Kasm gets one error_message naming every field', async () => {
    const k = await kasm.inject({
      method: 'POST',
      url: '/things',
      payload: { name: 5, kind: 'c', count: '3' },
    });
    expect(k.statusCode).toBe(400);
    expect(k.headers['content-type']).toMatch(/^application\/json/);
    expect(k.json()).toEqual({
      error_message: 'name must be a string; kind must be one of: a, b; count must be an integer',
    });
  });

  test('a NUL character in a key is a 400 naming it', async () => {
    const k = await kasm.inject({
      method: 'POST',
      url: '/things',
      payload: { ['k\u0000']: 1, name: 'ab', kind: 'a' },
    });
    expect(k.json()).toEqual({ error_message: 'k\u0000 must not contain NUL characters' });
  });

  test.each([
    [
      'malformed JSON',
      { payload: '{"name":', headers: { 'content-type': 'application/json' } },
      400,
      'Malformed JSON body',
    ],
    [
      'an empty JSON body',
      { payload: '', headers: { 'content-type': 'application/json' } },
      400,
      'Request body is empty; send a JSON object',
    ],
    [
      'a text body',
      { payload: 'name=abc', headers: { 'content-type': 'text/plain' } },
      415,
      'Content-Type must be application/json',
    ],
    [
      'a form body',
      { payload: 'name=abc', headers: { 'content-type': 'application/x-www-form-urlencoded' } },
      415,
      'Content-Type must be application/json',
    ],
    [
      'an oversized body',
      {
        payload: JSON.stringify({ name: 'x'.repeat(2000) }),
        headers: { 'content-type': 'application/json' },
      },
      413,
      'Request body is larger than 1024 bytes',
    ],
  ])('%s: the detail as error_message', async (_name, request, status, detail) => {
    const r = await kasm.inject({ method: 'POST', url: '/things', ...request });
    expect(r.statusCode).toBe(status);
    expect(r.json()).toEqual({ error_message: detail });
  });

  test('unknown paths are 404 in the dialect; outages 503 with Retry-After and no internals', async () => {
    const notFound = await kasm.inject('/api/public/nothing');
    expect(notFound.statusCode).toBe(404);
    expect(notFound.json()).toEqual({ error_message: 'No such path: GET /api/public/nothing' });
    const down = await kasm.inject('/down');
    expect(down.statusCode).toBe(503);
    expect(down.headers['retry-after']).toBe('5');
    expect(down.body).not.toMatch(/ECONNREFUSED|5432/);
  });
});
