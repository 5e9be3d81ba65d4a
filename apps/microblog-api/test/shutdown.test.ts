import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { request } from 'node:http';
import { resolve } from 'node:path';
import { freePort, testDatabase } from '@platform/db/testing';
import { childProcessEnv } from '@platform/testing';

const APP_DIR = resolve(__dirname, '..');
const TSX = resolve(APP_DIR, '../../node_modules/.bin/tsx');

/** `src/main.ts` in its own process on a free port, once it answers /readyz; its output kept. */
async function startMain(
  config: Parameters<typeof childProcessEnv>[0],
  extraEnv: Record<string, string> = {},
) {
  const port = await freePort();
  const env = childProcessEnv(config, {
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    ...extraEnv,
  });
  const child = spawn(TSX, ['--conditions=@platform/source', 'src/main.ts'], { cwd: APP_DIR, env });
  const started = { child, port, output: '' };
  child.stdout.on('data', (chunk) => (started.output += chunk));
  child.stderr.on('data', (chunk) => (started.output += chunk));
  const deadline = Date.now() + 40_000;
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/readyz`)).ok) return started;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`service did not start:\n${started.output}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * The real entry point (`src/main.ts`) in its own process: SIGTERM lets a request that is still
 * arriving finish and be stored, then the process exits 0 and stops listening. Its logs are JSON
 * lines carrying request ids.
 */
describe('main.ts process', () => {
  const fresh = testDatabase('microblog');
  let main: Awaited<ReturnType<typeof startMain>>;
  let child: ChildProcessWithoutNullStreams;
  let port: number;

  beforeAll(async () => {
    main = await startMain(fresh.config);
    ({ child, port } = main);
  }, 60_000);

  afterAll(async () => {
    if (child.exitCode === null) child.kill('SIGKILL');
    await fresh.cleanup();
  });

  test('SIGTERM finishes the in-flight request, then exits 0 and stops listening', async () => {
    const body = JSON.stringify({
      content: 'sent while the server shuts down',
      quest_topic: 'online_safety',
      student_name: 'Kim',
    });
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));

    const response = new Promise<{ status: number; body: string }>((resolveResponse, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/api/microblog',
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            'x-request-id': 'shutdown-test-1',
          },
        },
        (res) => {
          let text = '';
          res.on('data', (c) => (text += c));
          res.on('end', () => resolveResponse({ status: res.statusCode ?? 0, body: text }));
        },
      );
      req.on('error', reject);
      // Half the body now; the rest after the signal: the request is in flight across SIGTERM.
      req.write(body.slice(0, 20));
      setTimeout(() => {
        child.kill('SIGTERM');
        setTimeout(() => req.end(body.slice(20)), 500);
      }, 300);
    });

    const answer = await response;
    expect(answer.status).toBe(201);
    expect(JSON.parse(answer.body)).toMatchObject({
      content: 'sent while the server shuts down',
      student_name: 'Kim',
    });
    expect(await exited).toBe(0);
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();

    const lines = main.output
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.some((l) => l.msg === 'shutting down gracefully' && l.signal === 'SIGTERM')).toBe(true);
    const requestLines = lines.filter((l) => l.reqId === 'shutdown-test-1');
    expect(requestLines.map((l) => l.msg)).toEqual(
      expect.arrayContaining(['incoming request', 'request completed']),
    );
  }, 30_000);
});

/**
 * SHUTDOWN_DRAIN_MS: after SIGTERM the process keeps serving for the drain while /readyz answers 503
 * and responses close their connections (a load balancer takes it out first), then exits 0.
 */
describe('main.ts process with a drain period', () => {
  const fresh = testDatabase('microblog');
  let child: ChildProcessWithoutNullStreams;
  let port: number;

  beforeAll(async () => {
    ({ child, port } = await startMain(fresh.config, { SHUTDOWN_DRAIN_MS: '2500' }));
  }, 60_000);

  afterAll(async () => {
    if (child.exitCode === null) child.kill('SIGKILL');
    await fresh.cleanup();
  });

  test('SIGTERM: not ready at once, still serving reads and writes during the drain, then exit 0', async () => {
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const base = `http://127.0.0.1:${port}`;
    child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));

    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(503);
    expect(ready.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const write = await fetch(`${base}/api/microblog`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        content: 'written during the drain',
        quest_topic: 'online_safety',
        student_name: 'Kim',
      }),
    });
    expect(write.status).toBe(201);
    expect(write.headers.get('connection')).toBe('close');
    const read = await fetch(`${base}/api/microblog`);
    expect(read.status).toBe(200);
    expect(JSON.stringify(await read.json())).toContain('written during the drain');
    expect(child.exitCode).toBeNull();

    expect(await exited).toBe(0);
    await expect(fetch(`${base}/healthz`)).rejects.toThrow();
  }, 30_000);
});
