import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import helmet from 'helmet';
import Fastify, { type FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { FieldError } from '@platform/schema';
import {
  headersOf,
  HELMET_OPTIONS,
  listenWithGracefulShutdown,
  platform,
  reasonPhrase,
  serverOptions,
  type AjvError,
  type ErrorDialect,
} from '../src';
import {
  dialectTestApp,
  INVALID_THING,
  REFUSED_BODIES,
  STRICT_REQUEST_RULES as STRICT,
} from '@platform/testing';
import { listenOnLoopback, platformApp, platformOptions, slowRoute } from './support/platform';

/** A dialect of the tests' own: the problem as it is, under a media type of its own, failed fields listed. */
const TestError = Type.Object(
  {
    status: Type.Integer(),
    title: Type.String(),
    detail: Type.String(),
    fields: Type.Optional(Type.Array(Type.Ref('FieldError'))),
  },
  { $id: 'TestError' },
);
const testDialect: ErrorDialect = {
  schemaRef: 'TestError',
  schemas: [FieldError, TestError],
  contentType: 'application/vnd.test-error+json; charset=utf-8',
  body: (p) => ({
    status: p.status,
    title: reasonPhrase(p.status),
    detail: p.detail,
    ...(p.fields ? { fields: p.fields } : {}),
  }),
};

/** Another: one sentence, and on validation failures its own wording (the Ajv keyword) by field and where. */
const TerseError = Type.Object(
  {
    error: Type.String(),
    where: Type.Optional(Type.String()),
    failures: Type.Optional(Type.Record(Type.String(), Type.String())),
  },
  { $id: 'TerseError' },
);
const fieldOf = (e: AjvError) =>
  e.instancePath.slice(1) || (e.keyword === 'required' ? String(e.params.missingProperty) : '_');
const terseDialect: ErrorDialect = {
  schemaRef: 'TerseError',
  schemas: [TerseError],
  contentType: 'application/json; charset=utf-8',
  body: (p) => ({
    error: p.detail,
    ...(p.fields
      ? { where: p.location, failures: Object.fromEntries(p.fields.map((f) => [f.field, f.message])) }
      : {}),
  }),
  describeValidation: (errors) => errors.map((e) => ({ field: fieldOf(e), message: e.keyword })),
};

describe('one error path, any dialect', () => {
  let plain: FastifyInstance;
  let terse: FastifyInstance;
  beforeAll(async () => {
    [plain, terse] = await Promise.all([dialectTestApp(testDialect), dialectTestApp(terseDialect)]);
  });
  afterAll(() => Promise.all([plain, terse].map((a) => a.close())));

  test('validation failures: the default wording lists every field with a readable message, in the dialect', async () => {
    const r = await plain.inject({ method: 'POST', url: '/things', payload: INVALID_THING.payload });
    expect(r.statusCode).toBe(400);
    expect(r.headers['content-type']).toMatch(/^application\/vnd\.test-error\+json/);
    expect(r.json()).toEqual({
      status: 400,
      title: 'Bad Request',
      detail: INVALID_THING.detail,
      fields: INVALID_THING.fields,
    });
  });

  test("validation failures: a dialect's own wording, with where they were found", async () => {
    const r = await terse.inject({ method: 'POST', url: '/things', payload: INVALID_THING.payload });
    expect(r.statusCode).toBe(400);
    expect(r.headers['content-type']).toMatch(/^application\/json/);
    expect(r.json()).toEqual({
      error: 'type; enum; type',
      where: 'body',
      failures: { name: 'type', kind: 'enum', count: 'type' },
    });
    const q = await terse.inject('/things?limit=x');
    expect(q.json()).toEqual({ error: 'type', where: 'querystring', failures: { limit: 'type' } });
  });

  test('text is trimmed before its length is checked; custom messages replace union noise', async () => {
    expect(
      (
        await plain.inject({ method: 'POST', url: '/things', payload: { name: '  abc  ', kind: 'a' } })
      ).json(),
    ).toEqual({ name: 'abc' });
    const blank = await plain.inject({
      method: 'POST',
      url: '/things',
      payload: { name: '      ', kind: 'a' },
    });
    expect(blank.json().fields).toEqual([{ field: 'name', message: 'name must be 2..5 characters' }]);
    const ref = await plain.inject({
      method: 'POST',
      url: '/things',
      payload: { name: 'abc', kind: 'a', ref: true },
    });
    expect(ref.json().fields).toEqual([{ field: 'ref', message: 'ref must be a number or an x-string' }]);
  });

  test('NUL characters anywhere in a body are a 400 naming the field (PostgreSQL text cannot hold them)', async () => {
    const r = await plain.inject({
      method: 'POST',
      url: '/things',
      payload: { name: 'ab', kind: 'a', nested: { deep: ['ok', 'x\u0000y'] } },
    });
    expect(r.statusCode).toBe(400);
    expect(r.json().fields).toEqual([
      { field: 'nested.deep.1', message: 'nested.deep.1 must not contain NUL characters' },
    ]);
    const k = await terse.inject({
      method: 'POST',
      url: '/things',
      payload: { ['k\u0000']: 1, name: 'ab', kind: 'a' },
    });
    expect(k.json()).toEqual({
      error: 'k\u0000 must not contain NUL characters',
      where: 'body',
      failures: { 'k\u0000': 'k\u0000 must not contain NUL characters' },
    });
  });

  test('JSON bodies are never coerced; query strings are', async () => {
    expect(
      (
        await plain.inject({
          method: 'POST',
          url: '/things',
          payload: { name: 'abc', kind: 'a', count: '3' },
        })
      ).statusCode,
    ).toBe(400);
    expect((await plain.inject('/things?limit=3')).json()).toEqual({ limit: 3 });
  });

  test('a rule checked by a handler leaves like a schema failure', async () => {
    expect((await terse.inject('/rule')).json()).toEqual({
      error: 'start must come before end',
      where: 'querystring',
      failures: { start: 'start must come before end' },
    });
    expect((await plain.inject('/rule')).json().fields).toEqual([
      { field: 'start', message: 'start must come before end' },
    ]);
  });

  test.each(REFUSED_BODIES)('%s', async (_name, request, status, detail) => {
    for (const [app, body] of [
      [plain, { status, title: reasonPhrase(status), detail }],
      [terse, { error: detail }],
    ] as const) {
      const r = await app.inject({ method: 'POST', url: '/things', ...request });
      expect(r.statusCode).toBe(status);
      expect(r.json()).toEqual(body);
    }
  });

  test('unknown paths are 404 and known paths with another method 405 with Allow, in each dialect', async () => {
    const notFound = await terse.inject('/api/public/nothing');
    expect(notFound.statusCode).toBe(404);
    expect(notFound.json()).toEqual({ error: 'No such path: GET /api/public/nothing' });
    const wrong = await plain.inject({ method: 'DELETE', url: '/things?x=1' });
    expect(wrong.statusCode).toBe(405);
    expect(wrong.headers.allow).toBe('GET, HEAD, POST');
    expect(wrong.json()).toMatchObject({ status: 405, title: 'Method Not Allowed' });
  });

  test('unexpected exceptions are 500 without internals; outages are 503 with Retry-After', async () => {
    const boom = await plain.inject('/boom');
    expect(boom.statusCode).toBe(500);
    expect(boom.json()).toEqual({
      status: 500,
      title: 'Internal Server Error',
      detail: 'An unexpected error occurred',
    });
    expect(boom.body).not.toMatch(/secret_table|app\.ts/);
    const down = await terse.inject('/down');
    expect(down.statusCode).toBe(503);
    expect(down.headers['retry-after']).toBe('5');
    expect(down.body).not.toMatch(/ECONNREFUSED|5432/);
  });

  test('a dialect that does not list its own body schema is refused when the platform registers', async () => {
    const app = Fastify(serverOptions({ logLevel: 'silent' }));
    await expect(
      app.register(platform, platformOptions({ ...testDialect, schemas: [FieldError] })).ready(),
    ).rejects.toThrow(/TestError/);
    await app.close();
  });
});

describe('request rules, stated by each service', () => {
  const post = (app: FastifyInstance, payload?: string, type?: string) =>
    app.inject({
      method: 'POST',
      url: '/things',
      ...(payload === undefined ? {} : { payload }),
      ...(type ? { headers: { 'content-type': type } } : {}),
    });

  test('with trimming, NUL rejection and JSON-only off, each rule is off', async () => {
    const app = await dialectTestApp(testDialect, {
      requestRules: { trim: false, rejectNul: false, jsonOnly: false, emptyBody: 'reject' },
    });
    expect((await post(app, '{"name":" abc","kind":"a"}', 'application/json')).json()).toEqual({
      name: ' abc',
    });
    expect((await post(app, '{"name":"a\\u0000b","kind":"a"}', 'application/json')).json()).toEqual({
      name: 'a\u0000b',
    });
    // text/plain is parsed (as a string), so the body fails validation instead of being a 415
    const text = await post(app, 'name=abc', 'text/plain');
    expect(text.statusCode).toBe(400);
    expect(text.json().fields).toEqual([{ field: 'body', message: 'body must be an object' }]);
    await app.close();
  });

  test("emptyBody 'reject': a POST without a body fails validation as a whole", async () => {
    const app = await dialectTestApp(testDialect);
    const r = await post(app);
    expect(r.statusCode).toBe(400);
    expect(r.json().fields).toEqual([{ field: 'body', message: 'body must be an object' }]);
    await app.close();
  });

  test("emptyBody 'as-empty-object': a POST without a body validates {}; an empty JSON body and null stay 400s", async () => {
    const app = await dialectTestApp(testDialect, {
      requestRules: { ...STRICT, emptyBody: 'as-empty-object' },
    });
    const none = await post(app);
    expect(none.statusCode).toBe(400);
    expect(none.json().fields).toEqual([
      { field: 'name', message: 'name is required' },
      { field: 'kind', message: 'kind is required' },
    ]);
    expect((await post(app, '', 'application/json')).json().detail).toBe(
      'Request body is empty; send a JSON object',
    );
    expect((await post(app, 'null', 'application/json')).json().fields).toEqual([
      { field: 'body', message: 'body must be an object' },
    ]);
    expect((await post(app, '', 'text/plain')).statusCode).toBe(415);
    await app.close();
  });

  test('blankBodyIsEmpty: a blank body of any type and the JSON null are no body; other content is a 415', async () => {
    const app = await dialectTestApp(testDialect, {
      requestRules: { ...STRICT, emptyBody: 'as-empty-object', blankBodyIsEmpty: true },
    });
    const required = [
      { field: 'name', message: 'name is required' },
      { field: 'kind', message: 'kind is required' },
    ];
    for (const [payload, type] of [
      [undefined, undefined],
      ['', 'application/json'],
      ['  \n', 'application/json'],
      ['null', 'application/json'],
      ['', 'text/plain'],
      ['', 'application/x-www-form-urlencoded'],
    ] as const) {
      const r = await post(app, payload, type);
      expect({ payload, type, status: r.statusCode, fields: r.json().fields }).toEqual({
        payload,
        type,
        status: 400,
        fields: required,
      });
    }
    expect((await post(app, '{"name":"abc","kind":"a"}', 'application/json')).json()).toEqual({
      name: 'abc',
    });
    expect((await post(app, '{"name":', 'application/json')).json().detail).toBe('Malformed JSON body');
    expect((await post(app, 'name=abc', 'text/plain')).statusCode).toBe(415);
    await app.close();
  });
});

describe('operations endpoints and headers', () => {
  test('no response asks browsers to upgrade to https (the services are served over plain HTTP)', async () => {
    const app = await dialectTestApp(testDialect);
    for (const url of ['/docs', '/docs/static/index.html', '/healthz', '/nothing']) {
      const csp = (await app.inject(url)).headers['content-security-policy'];
      expect(csp).toMatch(/default-src 'self'/);
      expect(csp).not.toMatch(/upgrade-insecure-requests/);
    }
    await app.close();
  });

  test("every response carries helmet's headers as helmet writes them on a real response", async () => {
    const headersAt = async (port: number, path: string) =>
      Object.fromEntries((await fetch(`http://127.0.0.1:${port}${path}`)).headers);
    // What helmet's own middleware sets on a real Node response, with the platform's options.
    const server = createServer((req, res) => helmet(HELMET_OPTIONS)(req, res, () => res.end()));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const real = await headersAt((server.address() as AddressInfo).port, '/');
    server.close();
    const helmets = Object.keys(real).filter(
      (name) => !['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding'].includes(name),
    );
    expect(helmets.length).toBeGreaterThanOrEqual(10);

    // The app's answers, read off the wire too.
    const app = await dialectTestApp(testDialect);
    const port = await listenOnLoopback(app);
    for (const url of ['/healthz', '/nothing', '/metrics']) {
      const headers = await headersAt(port, url);
      for (const name of helmets) expect([url, name, headers[name]]).toEqual([url, name, real[name]]);
    }
    // Swagger UI's page keeps its own CSP (it needs inline styles), helmet's others.
    const docs = await headersAt(port, '/docs/static/index.html');
    expect(docs['content-security-policy']).not.toBe(real['content-security-policy']);
    expect(docs['strict-transport-security']).toBe(real['strict-transport-security']);
    await app.close();
  });

  test('headersOf records what a middleware sets; a failing one is an error at start', async () => {
    expect(
      await headersOf((_req, res, next) => {
        res.setHeader('X-One', '1');
        res.setHeader('x-many', ['a', 'b']);
        next();
      }),
    ).toEqual({ 'x-one': '1', 'x-many': 'a, b' });
    await expect(headersOf((_req, _res, next) => next(new Error('bad options')))).rejects.toThrow(
      'bad options',
    );
  });

  test('readiness follows the check; liveness does not', async () => {
    let healthy = true;
    const app = await dialectTestApp(testDialect, {
      readiness: async () => {
        if (!healthy) throw new Error('db down');
      },
    });
    expect((await app.inject('/readyz')).json()).toEqual({ status: 'ready' });
    healthy = false;
    const r = await app.inject('/readyz');
    expect(r.statusCode).toBe(503);
    expect(r.json()).toMatchObject({ status: 503, title: 'Service Unavailable' });
    expect((await app.inject('/healthz')).json()).toEqual({ status: 'ok' });
    await app.close();
  });

  test('metrics, request ids, CORS with credentials, docs with named components', async () => {
    const app = await dialectTestApp(testDialect);
    await app.inject('/things?limit=2');
    const metrics = await app.inject('/metrics');
    expect(metrics.headers['content-type']).toMatch(/^text\/plain/);
    expect(metrics.body).toMatch(/process_cpu_user_seconds_total/);
    expect(metrics.body).toMatch(
      /http_request_duration_seconds_count\{method="GET",route="\/things",status_code="200"\} 1/,
    );
    // Per-route latency is a histogram only (quantiles via histogram_quantile): no summary to keep up.
    expect(metrics.body).not.toMatch(/http_request_summary_seconds_count\{/);

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
    expect(Object.keys(doc.components.schemas)).toEqual(expect.arrayContaining(['TestError', 'FieldError']));
    expect(
      doc.paths['/things'].post.responses['400'].content['application/vnd.test-error+json'].schema.$ref,
    ).toBe('#/components/schemas/TestError');
    expect(doc.tags.map((t: { name: string }) => t.name)).toEqual(['things', 'ops']);
    expect(doc.paths['/readyz'].get.responses['503']).toBeDefined();
    await app.close();
  });

  test("the document's error components are exactly the dialect's schemas", async () => {
    const components = async (dialect: ErrorDialect) => {
      const app = await dialectTestApp(dialect);
      const names = Object.keys((await app.inject('/docs/json')).json().components.schemas).sort();
      await app.close();
      return names;
    };
    expect(await components(testDialect)).toEqual(['FieldError', 'TestError']);
    expect(await components(terseDialect)).toEqual(['TerseError']);
  });
});

describe('shutdown', () => {
  test('a response finished during the drain closes its keep-alive connection, so close() does not wait for it', async () => {
    const app = await platformApp(testDialect);
    const slowRequest = slowRoute(app);
    const port = await listenOnLoopback(app);

    const { createConnection } = await import('node:net');
    const socket = createConnection({ port, host: '127.0.0.1' });
    let raw = '';
    socket.on('data', (c) => (raw += c));
    const ended = new Promise((r) => socket.on('close', r));
    socket.write('GET /slow HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n');
    await slowRequest.started;
    const closed = app.close();
    await new Promise((r) => setTimeout(r, 50));
    slowRequest.release();
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

describe('logs', () => {
  test("credentials are censored wherever a log line carries request headers, the service's own included", async () => {
    const lines: string[] = [];
    const options = serverOptions({ logLevel: 'info', secretHeaders: ['X-Service-Secret'] });
    const stream = { write: (line: string) => lines.push(line) };
    // A service that logs request headers (here: every request's, through the req serializer).
    const app = Fastify({
      ...options,
      logger: {
        ...(options.logger as object),
        stream,
        serializers: { req: (req) => ({ headers: req.headers }) },
      },
    });
    app.get('/echo', async () => ({}));
    await app.inject({
      url: '/echo',
      headers: {
        authorization: 'Bearer t0ken',
        cookie: 'refresh_token=r3fresh',
        'x-service-secret': 's3cret',
        'x-other': 'visible',
      },
    });
    await app.close();
    const logged = lines.join('\n');
    expect(logged).toContain('"x-other":"visible"');
    for (const secret of ['t0ken', 'r3fresh', 's3cret']) expect(logged).not.toContain(secret);
  });
});
