// Child processes: the built service under test and the bare servers it is measured against,
// started on free loopback ports, awaited over HTTP and stopped at clean-up (SIGTERM, SIGKILL after
// 5 s). Talking to them: `request`, the body as bytes and as JSON.
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { Buffer } from 'node:buffer';
import { mkdirSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import process from 'node:process';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { memory, type Memory } from './machine';
import { children, log, onCleanup, RESULTS_DIR, ROOT } from './run';

/** A free loopback port (released again before use: a tiny race, fine for a hand-run tool). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export interface NodeProcess {
  child: ChildProcessByStdio<null, Readable, Readable>;
  pid: number;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The last 8,000 characters of its stdout and stderr. */
  output(): string;
}

/** Starts `node args...` and remembers it for clean-up; keeps the tail of its output for errors. */
export function startNode(name: string, args: string[], env: NodeJS.ProcessEnv): NodeProcess {
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  if (child.pid === undefined) throw new Error(`${name} did not start`);
  children.add(child);
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-8000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited: NodeProcess['exited'] = new Promise((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  void exited.then(() => children.delete(child));
  onCleanup(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = sleep(5000).then(() => 'timeout' as const);
    if ((await Promise.race([exited, timer])) === 'timeout') {
      log(`${name} did not stop on SIGTERM within 5s; killing it`);
      child.kill('SIGKILL');
      await exited;
    }
  });
  return { child, pid: child.pid, exited, output: () => output };
}

/** Stops a process now rather than at clean-up, and waits for it to exit. */
export async function stopNode(proc: NodeProcess): Promise<void> {
  proc.child.kill('SIGTERM');
  await proc.exited;
}

/** Node's options to write a V8 CPU profile named `name` to results/ when the process stops. */
export function cpuProfileArgs(name: string | undefined): string[] {
  if (!name) return [];
  mkdirSync(RESULTS_DIR, { recursive: true });
  return ['--cpu-prof', `--cpu-prof-dir=${RESULTS_DIR}`, `--cpu-prof-name=${name}`];
}

/** Waits until `url` answers a 2xx to `init`; throws when the process exits first or after the timeout. */
export async function waitForHttp(
  name: string,
  proc: NodeProcess,
  url: string,
  init: RequestInit = {},
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const { child } = proc;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(
        `${name} exited (code ${child.exitCode}, signal ${child.signalCode}) before answering ${url}:\n${proc.output()}`,
      );
    try {
      const response = await fetch(url, { ...init, signal: AbortSignal.timeout(2000) });
      await response.arrayBuffer();
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`${name} did not answer ${url} within ${timeoutMs / 1000}s:\n${proc.output()}`);
}

/** An answer of `request`: the body as bytes and, when it has one, as JSON. */
export interface Answer<T> {
  response: Response;
  bytes: Buffer;
  /** The parsed body, of the shape the caller names (the service's schema type); undefined when empty. */
  json: T;
}

/** `fetch`, the body as bytes and (when it has one) as JSON; a status other than `expect` throws. */
export async function request<T = unknown>(
  url: string,
  init: RequestInit = {},
  expect = 200,
): Promise<Answer<T>> {
  const response = await fetch(url, init);
  const bytes = Buffer.from(await response.arrayBuffer());
  if (response.status !== expect)
    throw new Error(
      `${init.method ?? 'GET'} ${url} answered ${response.status}: ${bytes.toString('utf8').slice(0, 500)}`,
    );
  return { response, bytes, json: bytes.length ? JSON.parse(bytes.toString('utf8')) : undefined };
}

export interface Service extends NodeProcess {
  /** `http://127.0.0.1:<port>` */
  base: string;
  memoryIdle: Memory;
}

/**
 * Starts a built service (`node <script>`) with `env` plus a free loopback port, `HOST=127.0.0.1` and
 * warn-level JSON logs, and waits for its `GET /readyz`. With `cpuProfile` (a file name) the service
 * writes a V8 CPU profile to results/ when it stops. Returns the process, its base URL and its
 * memory at idle.
 */
export async function startService(
  name: string,
  script: string,
  env: NodeJS.ProcessEnv,
  cpuProfile: string | undefined,
): Promise<Service> {
  const port = await freePort();
  const proc = startNode(name, [...cpuProfileArgs(cpuProfile), script], {
    ...env,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    LOG_FORMAT: 'json',
  });
  const base = `http://127.0.0.1:${port}`;
  await waitForHttp(name, proc, `${base}/readyz`);
  const memoryIdle = memory(proc.pid);
  log(`${name} ready on ${base} (pid ${proc.pid}, RSS ${memoryIdle.rssMiB} MiB)`);
  return { ...proc, base, memoryIdle };
}
