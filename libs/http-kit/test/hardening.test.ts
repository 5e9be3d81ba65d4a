import Fastify, { type FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { parseEnv } from '@platform/schema';
import { reasonPhrase, serverOptions, serviceConfig, serviceEnv, STALLED_UPLOAD_MS } from '../src';
import { Value } from '@sinclair/typebox/value';
import {
  dialectTestApp,
  parseRawResponse as parse,
  rawExchange as exchange,
  type RawResponse,
} from '@platform/testing';
import { problemDialect } from './support/dialect';
import { listenOnLoopback, platformApp, sendRaw, slowRoute } from './support/platform';

const { schema: HardError, dialect } = problemDialect('HardError');

function expectInDialect(response: RawResponse, status: number) {
  expect(response.status).toBe(status);
  expect(response.headers['content-type']).toBe(dialect.contentType);
  expect(response.headers['x-content-type-options']).toBe('nosniff');
  const body = JSON.parse(response.body);
  expect(body).toMatchObject({ status, title: reasonPhrase(status) });
  expect(Value.Check(HardError, body)).toBe(true);
}

const STALLED_UPLOAD =
  'POST /things HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a":';

describe('stalled clients', () => {
  test('a body that stops arriving is answered 408 in the dialect and its connection closed, within the request timeout', async () => {
    const app = await dialectTestApp(dialect, { server: { requestTimeoutMs: 300 } });
    try {
      const port = await listenOnLoopback(app);
      const started = Date.now();
      const { closed } = exchange(port, STALLED_UPLOAD);
      const raw = await closed;
      expect(Date.now() - started).toBeLessThan(2000);
      expectInDialect(parse(raw), 408);
      expect(parse(raw).headers.connection).toBe('close');
    } finally {
      await app.close();
    }
  });

  test('close() during a stalled upload finishes promptly and closes the stalled connection', async () => {
    const app = await dialectTestApp(dialect); // the default 30 s request timeout
    const port = await listenOnLoopback(app);
    const { closed } = exchange(port, STALLED_UPLOAD);
    await new Promise((r) => setTimeout(r, 100));
    const started = Date.now();
    await app.close();
    await closed;
    // Cut off once it has sent nothing for STALLED_UPLOAD_MS, not at the 30 s request timeout.
    expect(Date.now() - started).toBeLessThan(STALLED_UPLOAD_MS + 2000);
  });

  test('close() still lets a running handler finish while a stalled upload is cut off', async () => {
    const app = await platformApp(dialect);
    const slowRequest = slowRoute(app);
    app.post('/things', async () => ({}));
    const port = await listenOnLoopback(app);
    const stalled = exchange(port, STALLED_UPLOAD);
    const slow = exchange(port, 'GET /slow HTTP/1.1\r\nHost: x\r\n\r\n');
    await slowRequest.started;
    const closing = app.close();
    await new Promise((r) => setTimeout(r, 100));
    slowRequest.release();
    expect(await slow.closed).toContain('{"done":true}');
    await stalled.closed;
    await closing;
  });

  test('the server options set timeouts and a connection cap by default', async () => {
    const app = Fastify(serverOptions({ logLevel: 'silent' }));
    expect(app.server.requestTimeout).toBe(30_000);
    expect(app.server.headersTimeout).toBeLessThanOrEqual(30_000);
    expect(app.server.keepAliveTimeout).toBe(72_000);
    expect(app.server.timeout).toBe(60_000);
    expect(app.server.maxConnections).toBe(4096);
    const capped = Fastify(serverOptions({ logLevel: 'silent', maxConnections: 7 }));
    expect(capped.server.maxConnections).toBe(7);
    await Promise.all([app.close(), capped.close()]);
  });
});

describe('errors before any route runs, in the dialect', () => {
  let app: FastifyInstance;
  let port: number;
  beforeAll(async () => {
    app = await dialectTestApp(dialect);
    port = await listenOnLoopback(app);
  });
  afterAll(() => app.close());

  const get = (raw: string) => sendRaw(port, raw);
  const request = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`;

  test('a malformed percent-encoding in the path (FST_ERR_BAD_URL) is a 400', async () => {
    const response = await get(request('/things/%ZZ'));
    expectInDialect(response, 400);
    expect(response.headers['x-frame-options']).toBe('SAMEORIGIN');
  });

  test('a path parameter up to 500 characters reaches the route; a longer one is a 414', async () => {
    expect((await get(request(`/things/${'a'.repeat(500)}`))).status).toBe(200);
    expectInDialect(await get(request(`/things/${'a'.repeat(501)}`)), 414);
  });

  test.each([
    [
      'a duplicate Content-Length',
      'POST /things HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}',
    ],
    [
      'Content-Length with Transfer-Encoding',
      'POST /things HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    ],
    [
      'bad chunking',
      'POST /things HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n{}\r\n0\r\n\r\n',
    ],
  ])('malformed HTTP (%s) is a 400 that closes the connection', async (_name, raw) => {
    const response = await get(raw);
    expectInDialect(response, 400);
    expect(response.headers.connection).toBe('close');
  });

  test('headers over 16 KB are a 431', async () => {
    const response = await get(`GET /things HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(17 * 1024)}\r\n\r\n`);
    expectInDialect(response, 431);
  });
});

describe('logged request URLs', () => {
  test('secret query parameters are censored in the logged url, other parameters and fields kept', async () => {
    const lines: string[] = [];
    const options = serverOptions({ logLevel: 'info' });
    const app = Fastify({
      ...options,
      logger: { ...(options.logger as object), stream: { write: (line: string) => lines.push(line) } },
    });
    app.get('/callback', async () => ({}));
    await app.inject({
      url: '/callback?page=2&token=t0k&ACCESS_TOKEN=acc3ss&refresh_token=r3fresh&password=pa55&api_key_secret=k3y&Secret=s3cr3t',
      remoteAddress: '10.1.2.3',
    });
    await app.close();
    const incoming = lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'incoming request');
    expect(incoming.req).toMatchObject({
      method: 'GET',
      url: '/callback?page=2&token=[REDACTED]&ACCESS_TOKEN=[REDACTED]&refresh_token=[REDACTED]&password=[REDACTED]&api_key_secret=[REDACTED]&Secret=[REDACTED]',
      host: 'localhost:80',
      remoteAddress: '10.1.2.3',
    });
    for (const secret of ['t0k', 'acc3ss', 'r3fresh', 'pa55', 'k3y', 's3cr3t'])
      expect(lines.join('\n')).not.toContain(secret);
  });
});

describe('metrics token', () => {
  test('unset: /metrics is open', async () => {
    const app = await dialectTestApp(dialect);
    const response = await app.inject({ url: '/metrics' });
    expect(response.statusCode).toBe(200);
    await app.close();
  });

  test('set: /metrics requires the bearer token, a 401 in the dialect otherwise', async () => {
    const app = await dialectTestApp(dialect, { metricsToken: 'm3trics' });
    for (const authorization of [undefined, 'Bearer wrong', 'm3trics', 'Basic m3trics']) {
      const response = await app.inject({
        url: '/metrics',
        headers: authorization ? { authorization } : {},
      });
      expect(response.statusCode).toBe(401);
      expect(response.headers['content-type']).toBe(dialect.contentType);
      expect(response.headers['www-authenticate']).toBe('Bearer');
      expect(response.json()).toMatchObject({ status: 401 });
    }
    const ok = await app.inject({ url: '/metrics', headers: { authorization: 'Bearer m3trics' } });
    expect(ok.statusCode).toBe(200);
    expect(ok.body).toContain('process_cpu');
    const document = app.swagger() as { paths: Record<string, { get: { description: string } }> };
    expect(document.paths['/metrics'].get.description).toContain('METRICS_TOKEN');
    await app.close();
  });

  test('METRICS_TOKEN reaches the service config; unset leaves it undefined', () => {
    const schema = Type.Object(serviceEnv({ port: 3000, schema: 's' }));
    const read = (env: Record<string, string>) => serviceConfig(parseEnv(schema, env));
    expect(read({ METRICS_TOKEN: 'm3trics' }).metricsToken).toBe('m3trics');
    expect(read({}).metricsToken).toBeUndefined();
  });
});
