/**
 * The platform's words under stress, over real sockets: a full hashing queue, a client that
 * abandons its upload, methods no route takes (CONNECT among them), the security headers of every
 * error, a per-address connection cap, and pretty mode's one line per request.
 */
import { createConnection, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import Fastify, { type FastifyInstance } from 'fastify';
import { isDatabaseUnavailable } from '@platform/db';
import { Value } from '@sinclair/typebox/value';
import { platform, SECURITY_HEADERS, serverOptions, type ServerOptionsInput } from '../src';
import { createPasswordHasher } from '@platform/passwords';
import { dialectTestApp, parseRawResponse as parse, type RawResponse } from '@platform/testing';
import { problemDialect } from './support/dialect';
import { listenOnLoopback, platformOptions, sendRaw } from './support/platform';

const { schema: StressError, dialect } = problemDialect('StressError');

/** Log entries written to a stream, as text and (JSON mode) parsed. */
function logCapture() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  return { lines, stream, entries: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

/** An app on the platform with JSON logs captured, and routes of the test's own. */
async function appWithLogs(register: (app: FastifyInstance) => void, server: ServerOptionsInput = {}) {
  const logs = logCapture();
  const options = serverOptions({ logLevel: 'info', dialect, bodyLimit: 1024 * 1024, ...server });
  const app = Fastify({ ...options, logger: { ...(options.logger as object), stream: logs.stream } });
  await app.register(
    platform,
    platformOptions(dialect, { isUnavailable: isDatabaseUnavailable, bodyLimit: 1024 * 1024 }),
  );
  register(app);
  return { app, logs, port: await listenOnLoopback(app) };
}

function expectInDialect(
  response: RawResponse | { status: number; headers: Record<string, unknown>; body: string },
  status: number,
) {
  expect(response.status).toBe(status);
  expect(response.headers['content-type']).toBe(dialect.contentType);
  const body = JSON.parse(response.body);
  expect(Value.Check(StressError, body)).toBe(true);
  expect(body.status).toBe(status);
  return body as { detail: string };
}

const until = async (check: () => boolean, timeoutMs = 10_000) => {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > timeoutMs) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
};

describe('a full password-hashing queue', () => {
  test('is a 503 saying so, with Retry-After, never "database unreachable"', async () => {
    const hasher = createPasswordHasher({
      memoryKib: 8,
      timeCost: 1,
      parallelism: 1,
      concurrency: 1,
      queue: 0,
    });
    const { app, logs, port } = await appWithLogs((a) =>
      // Two hashes at once with one slot and no queue: the second finds the queue full.
      a.post('/register', async () => {
        await Promise.all([hasher.hash('first password'), hasher.hash('second password')]);
        return {};
      }),
    );
    try {
      const response = await fetch(`http://127.0.0.1:${port}/register`, { method: 'POST' });
      const body = expectInDialect(
        {
          status: response.status,
          headers: Object.fromEntries(response.headers),
          body: await response.text(),
        },
        503,
      );
      expect(body.detail).toBe('Too many password checks are waiting; try again in a few seconds');
      expect(body.detail).not.toMatch(/database/i);
      expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(logs.entries().some((e) => e.msg === 'dependency unavailable')).toBe(false);
    } finally {
      await app.close();
    }
  });
});

describe('a client that aborts its upload', () => {
  test('is logged as the client’s event: no dependency warning, no 503 in the metrics', async () => {
    let reached = false;
    const { app, logs, port } = await appWithLogs((a) =>
      a.post('/things', async () => {
        reached = true;
        return {};
      }),
    );
    try {
      const socket = createConnection({ port, host: '127.0.0.1' });
      socket.on('error', () => undefined);
      await new Promise((r) => socket.once('connect', r));
      socket.write(
        'POST /things HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"a":"',
      );
      socket.write('x'.repeat(5000));
      await until(() => logs.entries().some((e) => e.msg === 'incoming request'));
      await new Promise((r) => setTimeout(r, 50));
      socket.destroy();
      await until(() => logs.entries().some((e) => e.msg === 'client aborted the request'));
      await new Promise((r) => setTimeout(r, 100));

      const entries = logs.entries();
      expect(reached).toBe(false);
      expect(entries.filter((e) => Number(e.level) >= 40)).toEqual([]);
      expect(entries.some((e) => e.msg === 'dependency unavailable')).toBe(false);
      expect(entries.find((e) => e.msg === 'client aborted the request')).toMatchObject({ level: 30 });
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(metrics).not.toMatch(/status_code="5\d\d"/);
    } finally {
      await app.close();
    }
  });
});

describe('methods no route takes, and the security headers of every answer', () => {
  let app: FastifyInstance;
  let port: number;
  beforeAll(async () => {
    app = await dialectTestApp(dialect, { server: { requestTimeoutMs: 500 } });
    port = await listenOnLoopback(app);
  });
  afterAll(() => app.close());

  const send = (raw: string | string[]) => sendRaw(port, raw);
  const line = (method: string, path: string, extra = '') =>
    `${method} ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${extra}\r\n`;

  test('CONNECT is a 405 in the dialect, on a connection that then closes', async () => {
    const response = await send('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    expectInDialect(response, 405);
    expect(response.headers.connection).toBe('close');
    expect(JSON.parse(response.body).detail).toMatch(/CONNECT/);
  });

  test.each([
    ['TRACE', '/things', 'GET, HEAD, POST'],
    ['PROPFIND', '/things', 'GET, HEAD, POST'],
    ['TRACE', '/nowhere', ''],
    ['MKCOL', '/things/1', 'GET, HEAD'],
  ])('%s %s is a 405 naming what the path takes (Allow: "%s")', async (method, path, allow) => {
    const response = await send(line(method, path));
    const body = expectInDialect(response, 405);
    expect(response.headers.allow).toBe(allow);
    expect(body.detail).toContain(`Method ${method} is not supported`);
  });

  test('a made-up method is a 400 in the dialect', async () => {
    const body = expectInDialect(await send(line('FROBNICATE', '/things')), 400);
    expect(body.detail).toBe('Unknown HTTP method');
  });

  /** Every kind of error answer, sent over a real socket. */
  const ERRORS: [string, string | string[], number][] = [
    ['404 unknown path', line('GET', '/nowhere'), 404],
    ['405 known path, other method', line('DELETE', '/things'), 405],
    ['405 unsupported method', line('TRACE', '/things'), 405],
    ['405 CONNECT', 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', 405],
    ['400 made-up method', line('FROBNICATE', '/things'), 400],
    ['400 bad percent-encoding (framework error)', line('GET', '/things/%ZZ'), 400],
    ['414 over-long parameter (framework error)', line('GET', `/things/${'a'.repeat(501)}`), 414],
    [
      '400 malformed framing',
      'POST /things HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}',
      400,
    ],
    ['431 header overflow', line('GET', '/things', `X-Big: ${'a'.repeat(17 * 1024)}\r\n`), 431],
    [
      '400 malformed JSON',
      line('POST', '/things', 'Content-Type: application/json\r\nContent-Length: 8\r\n') + '{"name":',
      400,
    ],
    [
      '413 body too large',
      line('POST', '/things', 'Content-Type: application/json\r\nContent-Length: 5000\r\n'),
      413,
    ],
    [
      '415 not JSON',
      line('POST', '/things', 'Content-Type: text/plain\r\nContent-Length: 2\r\n') + 'hi',
      415,
    ],
    ['400 validation', line('GET', '/things?limit=99'), 400],
    [
      '408 request timeout',
      'POST /things HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{',
      408,
    ],
    ['500 unexpected', line('GET', '/boom'), 500],
    ['503 database down', line('GET', '/down'), 503],
  ];

  test('a 200 carries exactly helmet’s set (SECURITY_HEADERS)', async () => {
    const ok = await send(line('GET', '/things?limit=2'));
    expect(ok.status).toBe(200);
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) expect(ok.headers[name]).toBe(value);
    expect(SECURITY_HEADERS['cross-origin-opener-policy']).toBe('same-origin');
  });

  test.each(ERRORS)('%s carries the same security headers as a 200', async (_name, raw, status) => {
    const ok = await send(line('GET', '/things?limit=2'));
    const response = await send(raw);
    expectInDialect(response, status);
    const security = (r: RawResponse) =>
      Object.fromEntries(Object.keys(SECURITY_HEADERS).map((name) => [name, r.headers[name]]));
    expect(security(response)).toEqual(security(ok));
  });
});

/** Opens a connection from `localAddress` that sends a stalled upload's headers, and keeps it. */
function stalledUpload(port: number, localAddress: string) {
  const socket = createConnection({ port, host: '127.0.0.1', localAddress });
  socket.on('error', () => undefined);
  // Reads what the server says (a 408 in the end), so the socket sees the server close it.
  socket.resume();
  socket.on('connect', () =>
    socket.write(
      // Within the body limit (1024), so it waits for the rest.
      'POST /things HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{',
    ),
  );
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const settled = new Promise<void>((resolve) => {
    socket.once('connect', () => resolve());
    socket.once('close', () => resolve());
  });
  return { socket, closed, settled };
}

/** A GET from `localAddress` on a fresh connection: its status, or an error's code. */
function getFrom(port: number, localAddress: string, timeoutMs = 10_000): Promise<number | string> {
  return new Promise((resolve) => {
    const socket: Socket = createConnection({ port, host: '127.0.0.1', localAddress });
    let received = '';
    const timer = setTimeout(() => socket.destroy(new Error('timeout')), timeoutMs);
    socket.on('connect', () =>
      socket.write('GET /things?limit=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
    );
    socket.on('data', (chunk) => (received += chunk));
    socket.on('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve(error.code ?? error.message);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(received ? parse(received).status : 'closed without an answer');
    });
  });
}

describe('open connections per address', () => {
  test('5,000 stalled uploads from one address: another address is served at once; the flood is capped and its connections cleaned', async () => {
    // The default cap (256) and total cap (4096); a short request timeout so the stalled uploads end.
    const app = await dialectTestApp(dialect, { server: { requestTimeoutMs: 3000 } });
    let flood: ReturnType<typeof stalledUpload>[] = [];
    try {
      const port = await listenOnLoopback(app);
      flood = Array.from({ length: 5000 }, () => stalledUpload(port, '127.0.0.2'));
      let ended = 0;
      for (const f of flood) void f.closed.then(() => ended++);
      // While the flood arrives, and once it is all there: another address is served at once.
      await until(() => ended >= 1000, 30_000);
      let started = Date.now();
      expect(await getFrom(port, '127.0.0.1')).toBe(200);
      expect(Date.now() - started).toBeLessThan(5000);
      await Promise.all(flood.map((f) => f.settled));
      started = Date.now();
      expect(await getFrom(port, '127.0.0.1')).toBe(200);
      expect(Date.now() - started).toBeLessThan(5000);
      // The address holds its cap, far from the total.
      const open = await new Promise<number>((resolve, reject) =>
        app.server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
      );
      expect(open).toBeLessThanOrEqual(256);

      // The stalled uploads end at the request timeout, and free the address's places.
      await Promise.all(flood.map((f) => f.closed));
      expect(await getFrom(port, '127.0.0.2')).toBe(200);
    } finally {
      // On a failure too: no client socket left open to keep Jest alive.
      for (const f of flood) f.socket.destroy();
      await app.close();
    }
  }, 60_000);

  test('one connection over the cap is closed at once; a trusted proxy is exempt', async () => {
    const capped = await dialectTestApp(dialect, { server: { maxConnectionsPerAddress: 3 } });
    const proxied = await dialectTestApp(dialect, {
      server: { maxConnectionsPerAddress: 3, trustProxy: '127.0.0.3, 10.0.0.0/8' },
    });
    try {
      for (const app of [capped, proxied]) await app.listen({ port: 0, host: '127.0.0.1' });
      const portOf = (app: FastifyInstance) => (app.server.address() as { port: number }).port;
      const held = [
        ...Array.from({ length: 3 }, () => stalledUpload(portOf(capped), '127.0.0.3')),
        ...Array.from({ length: 5 }, () => stalledUpload(portOf(proxied), '127.0.0.3')),
      ];
      await until(() => capped.server.listening && proxied.server.listening);
      await new Promise((r) => setTimeout(r, 200));
      expect(await getFrom(portOf(capped), '127.0.0.3')).toBe('closed without an answer');
      expect(await getFrom(portOf(capped), '127.0.0.4')).toBe(200);
      expect(await getFrom(portOf(proxied), '127.0.0.3')).toBe(200);
      for (const h of held) h.socket.destroy();
    } finally {
      await Promise.all([capped.close(), proxied.close()]);
    }
  });
});

describe('pretty logs', () => {
  // eslint-disable-next-line no-control-regex
  const plain = (line: string) => line.replace(/\x1b\[[0-9;]*m/g, '');

  test('one line per request: method, path without secrets, status, time; refusals say why on it', async () => {
    const logs = logCapture();
    const app = await dialectTestApp(dialect, {
      server: { logFormat: 'pretty', logLevel: 'info', logDestination: logs.stream },
    });
    try {
      const flush = () => new Promise((r) => setTimeout(r, 50));
      await flush();
      logs.lines.length = 0;

      expect((await app.inject({ url: '/things?limit=2&token=s3cr3t' })).statusCode).toBe(200);
      await flush();
      expect(logs.lines.map(plain)).toEqual([
        expect.stringMatching(/INFO.*: GET \/things\?limit=2&token=\[REDACTED\] 200 \d+\.\d ms$/),
      ]);
      expect(logs.lines.join('\n')).not.toContain('s3cr3t');

      for (const [request, expected] of [
        [{ url: '/things?limit=99' }, /GET \/things\?limit=99 400 \d+\.\d ms — limit must be/],
        [{ url: '/nowhere' }, /GET \/nowhere 404 \d+\.\d ms — No such path/],
        [
          { method: 'POST' as const, url: '/things', payload: { name: 'ab', kind: 'a' } },
          /POST \/things 201 /,
        ],
      ] as const) {
        logs.lines.length = 0;
        await app.inject(request);
        await flush();
        expect(logs.lines.map(plain)).toEqual([expect.stringMatching(expected)]);
      }
    } finally {
      await app.close();
    }
  });
});
