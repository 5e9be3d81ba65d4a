import Fastify, { type FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { TrimmedText, StringEnum, withMessage } from '@platform/schema';
import {
  errorResponses,
  listenWithGracefulShutdown,
  kasmDialect,
  platform,
  problemDetailsDialect,
  RequestValidationError,
  serverOptions,
  socialDialect,
  type ErrorDialect,
} from '../src';

/** A small service on the kit, built with the kit's server options, one per dialect. */
async function serviceWith(
  dialect: ErrorDialect,
  readiness: () => Promise<void> = async () => undefined,
): Promise<FastifyInstance> {
  const app = Fastify(serverOptions({ logLevel: 'silent', bodyLimit: 1024 }));
  await app.register(platform, {
    dialect,
    readiness,
    isUnavailable: (e) => (e as { code?: string }).code === 'ECONNREFUSED',
    bodyLimit: 1024,
    docs: {
      title: 'kit test',
      description: 'd',
      version: '0.0.1',
      tags: [{ name: 'things', description: 'things' }],
    },
    cors: { origins: ['http://allowed.example'], credentials: true },
  });
  app.post(
    '/things',
    {
      schema: {
        tags: ['things'],
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
                allOf: [{ pattern: '^\\p{L}', 'x-error-message': 'Must start with a letter' }],
              }),
            ),
          },
          { additionalProperties: false },
        ),
        response: { 201: Type.Object({ name: Type.String() }), ...errorResponses(dialect, [400, 500]) },
      },
    },
    async (request, reply) => reply.status(201).send({ name: (request.body as { name: string }).name }),
  );
  app.get(
    '/things',
    { schema: { querystring: Type.Object({ limit: Type.Integer({ minimum: 1, maximum: 10 }) }) } },
    async (request) => request.query,
  );
  app.get('/boom', async () => {
    throw new Error('relation "secret_table" does not exist at /srv/app.ts:12');
  });
  app.get('/down', async () => {
    throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
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

describe('one error path, three dialects', () => {
  let problem: FastifyInstance;
  let kasm: FastifyInstance;
  let social: FastifyInstance;
  beforeAll(async () => {
    [problem, kasm, social] = await Promise.all([
      serviceWith(problemDetailsDialect),
      serviceWith(kasmDialect),
      serviceWith(socialDialect),
    ]);
  });
  afterAll(() => Promise.all([problem, kasm, social].map((a) => a.close())));

  const invalid = { name: 5, kind: 'c', count: '3' };

  test('validation failures: problem details list every field with a readable message', async () => {
    const r = await problem.inject({ method: 'POST', url: '/things', payload: invalid });
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

  test('validation failures: Kasm gets one error_message, Flask gets errors.json.<field> lists', async () => {
    const k = await kasm.inject({ method: 'POST', url: '/things', payload: invalid });
    expect(k.statusCode).toBe(400);
    expect(k.json()).toEqual({
      error_message: 'name must be a string; kind must be one of: a, b; count must be an integer',
    });
    const s = await social.inject({ method: 'POST', url: '/things', payload: invalid });
    expect(s.statusCode).toBe(400);
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

  test('text is trimmed before its length is checked; custom messages replace union noise', async () => {
    expect(
      (
        await problem.inject({ method: 'POST', url: '/things', payload: { name: '  abc  ', kind: 'a' } })
      ).json(),
    ).toEqual({ name: 'abc' });
    const blank = await problem.inject({
      method: 'POST',
      url: '/things',
      payload: { name: '      ', kind: 'a' },
    });
    expect(blank.json().errors).toEqual([{ field: 'name', message: 'name must be 2..5 characters' }]);
    const ref = await problem.inject({
      method: 'POST',
      url: '/things',
      payload: { name: 'abc', kind: 'a', ref: true },
    });
    expect(ref.json().errors).toEqual([{ field: 'ref', message: 'ref must be a number or an x-string' }]);
  });

  test('NUL characters anywhere in a body are a 400 naming the field (PostgreSQL text cannot hold them)', async () => {
    const r = await problem.inject({
      method: 'POST',
      url: '/things',
      payload: { name: 'ab', kind: 'a', nested: { deep: ['ok', 'x\u0000y'] } },
    });
    expect(r.statusCode).toBe(400);
    expect(r.json().errors).toEqual([
      { field: 'nested.deep.1', message: 'nested.deep.1 must not contain NUL characters' },
    ]);
    const k = await kasm.inject({
      method: 'POST',
      url: '/things',
      payload: { ['k\u0000']: 1, name: 'ab', kind: 'a' },
    });
    expect(k.json()).toEqual({ error_message: 'k\u0000 must not contain NUL characters' });
  });

  test('JSON bodies are never coerced; query strings are', async () => {
    expect(
      (
        await problem.inject({
          method: 'POST',
          url: '/things',
          payload: { name: 'abc', kind: 'a', count: '3' },
        })
      ).statusCode,
    ).toBe(400);
    expect((await problem.inject('/things?limit=3')).json()).toEqual({ limit: 3 });
  });

  test('a rule checked by a handler leaves like a schema failure', async () => {
    expect((await social.inject('/rule')).json().errors).toEqual({
      query: { start: ['start must come before end'] },
    });
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
  ])('%s', async (_name, request, status, detail) => {
    for (const [app, body] of [
      [problem, { status, detail }],
      [kasm, { error_message: detail }],
      [social, { code: status, description: detail }],
    ] as const) {
      const r = await app.inject({ method: 'POST', url: '/things', ...request });
      expect(r.statusCode).toBe(status);
      expect(r.json()).toMatchObject(body);
    }
  });

  test('unknown paths are 404 and known paths with another method 405 with Allow, in each dialect', async () => {
    const notFound = await kasm.inject('/api/public/nothing');
    expect(notFound.statusCode).toBe(404);
    expect(notFound.json()).toEqual({ error_message: 'No such path: GET /api/public/nothing' });
    const wrong = await social.inject({ method: 'DELETE', url: '/things?x=1' });
    expect(wrong.statusCode).toBe(405);
    expect(wrong.headers.allow).toBe('GET, HEAD, POST');
    expect(wrong.json()).toMatchObject({ code: 405, message: 'Method Not Allowed' });
  });

  test('unexpected exceptions are 500 without internals; outages are 503 with Retry-After', async () => {
    const boom = await problem.inject('/boom');
    expect(boom.statusCode).toBe(500);
    expect(boom.json()).toEqual({
      type: 'about:blank',
      title: 'Internal Server Error',
      status: 500,
      detail: 'An unexpected error occurred',
    });
    expect(boom.body).not.toMatch(/secret_table|app\.ts/);
    const down = await kasm.inject('/down');
    expect(down.statusCode).toBe(503);
    expect(down.headers['retry-after']).toBe('5');
    expect(down.body).not.toMatch(/ECONNREFUSED|5432/);
  });
});

describe('operations endpoints and headers', () => {
  test('no response asks browsers to upgrade to https (the services are served over plain HTTP)', async () => {
    const app = await serviceWith(problemDetailsDialect);
    for (const url of ['/docs', '/docs/static/index.html', '/healthz', '/nothing']) {
      const csp = (await app.inject(url)).headers['content-security-policy'];
      expect(csp).toMatch(/default-src 'self'/);
      expect(csp).not.toMatch(/upgrade-insecure-requests/);
    }
    await app.close();
  });

  test('readiness follows the check; liveness does not', async () => {
    let healthy = true;
    const app = await serviceWith(socialDialect, async () => {
      if (!healthy) throw new Error('db down');
    });
    expect((await app.inject('/readyz')).json()).toEqual({ status: 'ready' });
    healthy = false;
    const r = await app.inject('/readyz');
    expect(r.statusCode).toBe(503);
    expect(r.json()).toMatchObject({ code: 503, message: 'Service Unavailable' });
    expect((await app.inject('/healthz')).json()).toEqual({ status: 'ok' });
    await app.close();
  });

  test('metrics, request ids, CORS with credentials, docs with named components', async () => {
    const app = await serviceWith(problemDetailsDialect);
    await app.inject('/things?limit=2');
    const metrics = await app.inject('/metrics');
    expect(metrics.headers['content-type']).toMatch(/^text\/plain/);
    expect(metrics.body).toMatch(/process_cpu_user_seconds_total/);
    expect(metrics.body).toMatch(
      /http_request_duration_seconds_count\{method="GET",route="\/things",status_code="200"\} 1/,
    );

    expect(
      (await app.inject({ url: '/healthz', headers: { 'x-request-id': 'abc-123' } })).headers['x-request-id'],
    ).toBe('abc-123');
    expect(
      (await app.inject({ url: '/healthz', headers: { 'x-request-id': 'bad id with spaces' } })).headers[
        'x-request-id'
      ],
    ).toMatch(/^[0-9a-f-]{36}$/);

    const preflight = await app.inject({
      method: 'OPTIONS',
      url: '/things',
      headers: {
        origin: 'http://allowed.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      },
    });
    expect(preflight.statusCode).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe('http://allowed.example');
    expect(preflight.headers['access-control-allow-credentials']).toBe('true');
    const other = await app.inject({ url: '/healthz', headers: { origin: 'http://evil.example' } });
    expect(other.headers['access-control-allow-origin']).toBeUndefined();

    const doc = (await app.inject('/docs/json')).json();
    expect(Object.keys(doc.components.schemas)).toEqual(
      expect.arrayContaining(['ProblemDetails', 'FieldError']),
    );
    expect(doc.paths['/things'].post.responses['400'].content['application/problem+json'].schema.$ref).toBe(
      '#/components/schemas/ProblemDetails',
    );
    expect(doc.tags.map((t: { name: string }) => t.name)).toEqual(['things', 'ops']);
    expect(doc.paths['/readyz'].get.responses['503']).toBeDefined();
    await app.close();
  });
});

describe('shutdown', () => {
  test('a response finished during the drain closes its keep-alive connection, so close() does not wait for it', async () => {
    const app = Fastify(serverOptions({ logLevel: 'silent' }));
    await app.register(platform, {
      dialect: kasmDialect,
      readiness: async () => undefined,
      bodyLimit: 1024,
      docs: { title: 't', description: 'd', version: '1', tags: [] },
      cors: { origins: '*' },
    });
    let release!: () => void;
    const slowStarted = new Promise<void>((started) => {
      app.get('/slow', async () => {
        started();
        await new Promise<void>((r) => (release = r));
        return { done: true };
      });
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as { port: number };

    const { createConnection } = await import('node:net');
    const socket = createConnection({ port, host: '127.0.0.1' });
    let raw = '';
    socket.on('data', (c) => (raw += c));
    const ended = new Promise((r) => socket.on('close', r));
    socket.write('GET /slow HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n');
    await slowStarted;
    const closed = app.close();
    await new Promise((r) => setTimeout(r, 50));
    release();
    const started = Date.now();
    await ended;
    await closed;

    expect(raw).toMatch(/^HTTP\/1\.1 200/);
    expect(raw).toMatch(/\r\nconnection: close\r\n/i);
    expect(raw).toContain('{"done":true}');
    expect(Date.now() - started).toBeLessThan(2000); // not the 72 s keep-alive timeout
  });
});

describe('listening', () => {
  test('a port already in use (a second npm start) is one clear sentence, and the app is closed', async () => {
    const squatter = Fastify();
    await squatter.listen({ port: 0, host: '127.0.0.1' });
    const { port } = squatter.server.address() as { port: number };
    const app = Fastify(serverOptions({ logLevel: 'silent' }));
    let closed = false;
    app.addHook('onClose', async () => {
      closed = true;
    });
    try {
      await expect(listenWithGracefulShutdown(app, { port, host: '127.0.0.1' })).rejects.toThrow(
        `port ${port} on 127.0.0.1 is already in use (is this service running already?): stop that process or set PORT to a free port`,
      );
      expect(closed).toBe(true); // its database pool and local-server membership are released
    } finally {
      await squatter.close();
    }
  });
});
