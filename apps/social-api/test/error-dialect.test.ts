import Fastify, { type FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { StringEnum, TrimmedText, VALIDATION_MESSAGE, withMessage } from '@platform/schema';
import { platform, RequestValidationError, serverOptions } from '@platform/http-kit';
import { socialDialect } from '../src/errors';

/**
 * The service's error dialect on its own (the Flask backend's envelope, marshmallow's wording), over
 * the platform's one error path: a bare app with one route whose schema has every kind of rule. The
 * service's own request rules and routes are tested through its app (http.test.ts and the others).
 */
async function dialectProbe(
  readiness: () => Promise<void> = async () => undefined,
): Promise<FastifyInstance> {
  const app = Fastify(serverOptions({ logLevel: 'silent', bodyLimit: 1024 }));
  await app.register(platform, {
    dialect: socialDialect,
    requestRules: { trim: true, rejectNul: true, jsonOnly: true, emptyBody: 'reject' },
    readiness,
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
            ref: Type.Optional(
              withMessage(
                Type.Union([Type.Integer(), Type.String({ pattern: '^x' })]),
                'must be a number or an x-string',
              ),
            ),
            tag: Type.Optional(
              Type.String({
                maxLength: 5,
                allOf: [{ pattern: '^\\p{L}', [VALIDATION_MESSAGE]: 'Must start with a letter' }],
              }),
            ),
          },
          { additionalProperties: false },
        ),
      },
    },
    async (request, reply) => reply.status(201).send({ name: (request.body as { name: string }).name }),
  );
  app.get(
    '/things',
    { schema: { querystring: Type.Object({ limit: Type.Integer({ minimum: 1, maximum: 10 }) }) } },
    async (request) => request.query,
  );
  app.get('/rule', async () => {
    throw new RequestValidationError(
      [{ field: 'start', message: 'start must come before end' }],
      'querystring',
    );
  });
  await app.ready();
  return app;
}

describe('the error dialect: the Flask envelope, marshmallow wording', () => {
  let social: FastifyInstance;
  beforeAll(async () => {
    social = await dialectProbe();
  });
  afterAll(() => social?.close());

  test('validation failures: Flask gets errors.json.<field> lists (errors.query.<field> for the query string)', async () => {
    const s = await social.inject({
      method: 'POST',
      url: '/things',
      payload: { name: 5, kind: 'c', count: '3' },
    });
    expect(s.statusCode).toBe(400);
    expect(s.headers['content-type']).toMatch(/^application\/json/);
    expect(s.json()).toEqual({
      code: 400,
      message: 'Validation Error',
      description: 'The server found one or more errors in the information that you sent.',
      errors: {
        json: {
          name: ['Not a valid string.'],
          kind: ['Must be one of: a, b.'],
          count: ['Not a valid integer.'],
        },
      },
    });
    const q = await social.inject('/things?limit=x');
    expect(q.json().errors).toEqual({ query: { limit: ['Not a valid integer.'] } });
  });

  test('the social dialect words schema failures as marshmallow does (the React client shows them)', async () => {
    const errorsOf = async (payload: unknown) =>
      (await social.inject({ method: 'POST', url: '/things', payload: payload as object })).json().errors;
    expect(await errorsOf({ kind: 'a', extra: 1, id: 2 })).toEqual({
      json: { name: ['Missing data for required field.'], extra: ['Unknown field.'], id: ['Unknown field.'] },
    });
    expect(await errorsOf({ name: null, kind: 'a', count: 12 })).toEqual({
      json: {
        name: ['Field may not be null.'],
        count: ['Must be greater than or equal to 1 and less than or equal to 9.'],
      },
    });
    expect(await errorsOf({ name: 'abcdefgh', kind: 'a' })).toEqual({
      json: { name: ['must be 2..5 characters'] },
    });
    expect(await errorsOf({ name: 'abc', kind: 'a', ref: 'y' })).toEqual({
      json: { ref: ['must be a number or an x-string'] },
    });
    expect(await errorsOf([1])).toEqual({ json: { _schema: ['Invalid input type.'] } });
    // An `allOf` rule (marshmallow's @validates) speaks only once the field's own rules pass.
    expect(await errorsOf({ name: 'a', kind: 'a', tag: '1' })).toEqual({
      json: { name: ['must be 2..5 characters'], tag: ['Must start with a letter'] },
    });
    expect(await errorsOf({ name: 'abc', kind: 'a', tag: '1abcdefgh' })).toEqual({
      json: { tag: ['Longer than maximum length 5.'] },
    });
  });

  test('a rule checked by a handler leaves like a schema failure, under its location', async () => {
    expect((await social.inject('/rule')).json().errors).toEqual({
      query: { start: ['start must come before end'] },
    });
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
  ])('%s: code and description in the envelope', async (_name, request, status, detail) => {
    const r = await social.inject({ method: 'POST', url: '/things', ...request });
    expect(r.statusCode).toBe(status);
    expect(r.json()).toMatchObject({ code: status, description: detail });
  });

  test('a known path with another method is a 405 with Allow, its reason phrase as message', async () => {
    const wrong = await social.inject({ method: 'DELETE', url: '/things?x=1' });
    expect(wrong.statusCode).toBe(405);
    expect(wrong.headers.allow).toBe('GET, HEAD, POST');
    expect(wrong.json()).toMatchObject({ code: 405, message: 'Method Not Allowed' });
  });

  test('an unready service answers 503 in the envelope', async () => {
    const app = await dialectProbe(async () => {
      throw new Error('db down');
    });
    const r = await app.inject('/readyz');
    expect(r.statusCode).toBe(503);
    expect(r.json()).toMatchObject({ code: 503, message: 'Service Unavailable' });
    await app.close();
  });
});
