import Fastify, { type FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { StringEnum, TrimmedText } from '@platform/schema';
import { platform, RequestValidationError, serverOptions } from '@platform/http-kit';
import { problemDetailsDialect } from '../src/errors';

/**
 * The service's error dialect on its own (RFC 9457 problem details), over the platform's one error
 * path: a bare app with one route. The service's error table is tested through its app
 * (errors.test.ts).
 */
async function dialectProbe(): Promise<FastifyInstance> {
  const app = Fastify(serverOptions({ logLevel: 'silent', bodyLimit: 1024 }));
  await app.register(platform, {
    dialect: problemDetailsDialect,
    requestRules: { trim: true, rejectNul: true, jsonOnly: true, emptyBody: 'reject' },
    readiness: async () => undefined,
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
  app.get('/boom', async () => {
    throw new Error('relation "secret_table" does not exist at /srv/app.ts:12');
  });
  app.get('/rule', async () => {
    throw new RequestValidationError(
      [{ field: 'start', message: 'start must come before end' }],
      'querystring',
    );
  });
  await app.ready();
  return app;
}

describe('the error dialect: RFC 9457 problem details', () => {
  let problem: FastifyInstance;
  beforeAll(async () => {
    problem = await dialectProbe();
  });
  afterAll(() => problem?.close());

  test('validation failures: problem details list every field with a readable message', async () => {
    const r = await problem.inject({
      method: 'POST',
      url: '/things',
      payload: { name: 5, kind: 'c', count: '3' },
    });
    expect(r.statusCode).toBe(400);
    expect(r.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(r.json()).toEqual({
      type: 'about:blank',
      title: 'Bad Request',
      status: 400,
      detail: 'name must be a string; kind must be one of: a, b; count must be an integer',
      errors: [
        { field: 'name', message: 'name must be a string' },
        { field: 'kind', message: 'kind must be one of: a, b' },
        { field: 'count', message: 'count must be an integer' },
      ],
    });
  });

  test('a rule checked by a handler leaves like a schema failure', async () => {
    expect((await problem.inject('/rule')).json().errors).toEqual([
      { field: 'start', message: 'start must come before end' },
    ]);
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
  ])('%s: status and detail in the problem', async (_name, request, status, detail) => {
    const r = await problem.inject({ method: 'POST', url: '/things', ...request });
    expect(r.statusCode).toBe(status);
    expect(r.json()).toMatchObject({ status, detail });
  });

  test('unexpected exceptions are 500 without internals', async () => {
    const boom = await problem.inject('/boom');
    expect(boom.statusCode).toBe(500);
    expect(boom.json()).toEqual({
      type: 'about:blank',
      title: 'Internal Server Error',
      status: 500,
      detail: 'An unexpected error occurred',
    });
    expect(boom.body).not.toMatch(/secret_table|app\.ts/);
  });
});
