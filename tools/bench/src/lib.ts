// Helpers shared by the hand-run benchmarks of this folder (microblog.ts: microblog-api, social.ts:
// social-api): options, clean-up on exit or Ctrl-C, builds, the throw-away database, child
// processes, /proc readings, the bare Fastify baseline, the autocannon runs and the report.
// See README.md in tools/bench.
import { spawn, spawnSync, type ChildProcess, type ChildProcessByStdio } from 'node:child_process';
import { Buffer } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import process from 'node:process';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import {
  ensureLocalServer,
  localDataDir,
  openDatabase,
  REPOSITORY_ROOT,
  type DatabaseConfig,
} from '@platform/db';
import { dropSchema } from '@platform/db/testing';
import autocannon from 'autocannon';
import { sql, type Kysely } from 'kysely';
import ts from 'typescript';
import type { BaselinePayload } from './baseline';

export { sleep };

export const ROOT = REPOSITORY_ROOT;
export const RESULTS_DIR = path.join(ROOT, 'tools/bench/results');
const BASELINE_SOURCE = path.join(__dirname, 'baseline.ts');

export const log = (message: string) => console.error(`[bench] ${message}`);

export const stamp = (date: Date) => date.toISOString().replace(/[:.]/g, '-');

export const round = (n: number, digits = 0): number | null =>
  Number.isFinite(n) ? Math.round(n * 10 ** digits) / 10 ** digits : null;

/** The 1/5/15-minute load averages (other work on the machine skews every figure; ratios less so). */
export const loadAverage = () => os.loadavg().map((n) => round(n, 2));

// ---------------------------------------------------------------------------------------------
// Options.

/**
 * A numeric option: what it is (its line of the usage), its environment variable, default and bounds
 * (integer and min 1 unless said).
 */
export interface NumberOption {
  help: string;
  env: string;
  fallback: number;
  integer?: boolean;
  min?: number;
}

/** The numeric options every benchmark takes. */
const LOAD_OPTIONS = {
  duration: { help: 'seconds measured per scenario', env: 'BENCH_DURATION', fallback: 10, integer: false },
  connections: { help: 'concurrent autocannon connections', env: 'BENCH_CONNECTIONS', fallback: 50 },
  warmup: {
    help: 'seconds of unmeasured warm-up before each scenario',
    env: 'BENCH_WARMUP',
    fallback: 2,
    integer: false,
    min: 0,
  },
} satisfies Record<string, NumberOption>;

type LoadOption = keyof typeof LOAD_OPTIONS;

/** A benchmark's options: its own numbers (`Own`), the load options and the common switches. */
export type BenchOptions<Own extends string> = Record<Own | LoadOption, number> & {
  build: boolean;
  cpuProf: boolean;
  databaseUrl: string | undefined;
};

/** What a benchmark is, for its usage. */
export interface BenchCommand<Own extends string> {
  /** How people run it (`npm run bench`). */
  command: string;
  /** The Nx project it measures. */
  project: string;
  /** The prefix of its throw-away schema (see `throwAwayDatabase`). */
  schemaPrefix: string;
  /** Its own numeric options, before the load options. */
  own: Record<Own, NumberOption>;
}

/** The usage text: a line per option, the numeric ones with their environment variable. */
function usageOf({ command, project, schemaPrefix, own }: BenchCommand<string>): string {
  const numbers = Object.entries<NumberOption>({ ...own, ...LOAD_OPTIONS });
  const width = Math.max(...numbers.map(([, { help }]) => help.length)) + 1;
  const line = (name: string, text: string) => `  ${name.padEnd(13)}  ${text}`;
  return [
    `usage: ${command} -- ${numbers.map(([name, { fallback }]) => `[--${name}=${fallback}]`).join(' ')} [--build]`,
    ...numbers.map(([name, { help, env }]) => line(`--${name}`, `${help.padEnd(width)}env ${env}`)),
    line('--build', `rebuild ${project} (and its libs) even if dist/ exists`),
    line(
      '--cpu-prof',
      'write a V8 CPU profile of the service to tools/bench/results/ (slows it down a little)',
    ),
    line(
      'DATABASE_URL',
      `PostgreSQL to use (a fresh schema ${schemaPrefix}_bench_<random>, dropped at the end);`,
    ),
    line('', 'unset: a fresh schema of the local PostgreSQL server, dropped at the end'),
  ].join('\n');
}

/**
 * Parses the command line: the benchmark's own numeric options, `--duration`, `--connections`,
 * `--warmup` (each also read from its environment variable), `--build`, `--cpu-prof` and `--help`
 * (prints the usage and exits). DATABASE_URL comes from the environment.
 */
export function benchOptions<Own extends string>(bench: BenchCommand<Own>): BenchOptions<Own> {
  const numbers: Record<string, NumberOption> = { ...bench.own, ...LOAD_OPTIONS };
  const { values }: { values: Record<string, string | boolean | undefined> } = parseArgs({
    options: {
      ...Object.fromEntries(Object.keys(numbers).map((name) => [name, { type: 'string' as const }])),
      build: { type: 'boolean', default: false },
      'cpu-prof': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    console.log(usageOf(bench));
    process.exit(0);
  }
  const parsed: Record<string, number> = {};
  for (const [name, { env, fallback, integer = true, min = 1 }] of Object.entries(numbers)) {
    const raw = String(values[name] ?? process.env[env] ?? fallback);
    const value = Number(raw);
    if (!Number.isFinite(value) || value < min || (integer && !Number.isInteger(value))) {
      throw new Error(
        `--${name} must be ${integer ? 'an integer' : 'a number'} >= ${min} (got ${JSON.stringify(raw)})`,
      );
    }
    parsed[name] = value;
  }
  // Every name of `own` and LOAD_OPTIONS was filled in by the loop above.
  return {
    ...(parsed as Record<Own | LoadOption, number>),
    build: values.build === true,
    cpuProf: values['cpu-prof'] === true,
    databaseUrl: process.env.DATABASE_URL || undefined,
  };
}

// ---------------------------------------------------------------------------------------------
// Clean-up: steps run last-in first-out, once, on success, error or signal.

type CleanupStep = () => unknown;

const cleanups: CleanupStep[] = [];
const children = new Set<ChildProcess>();
let cleaning: Promise<void> | undefined;

export const onCleanup = (step: CleanupStep) => {
  cleanups.push(step);
};

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

function runCleanups(): Promise<void> {
  cleaning ??= (async () => {
    for (let step = cleanups.pop(); step; step = cleanups.pop()) {
      try {
        await step();
      } catch (error) {
        console.error(`cleanup: ${message(error)}`);
      }
    }
  })();
  return cleaning;
}

/** Runs `bench(options())` with the clean-up wired to exit, errors and signals; exits with 0 or 1. */
export async function runMain<O>(options: () => O, bench: (opts: O) => Promise<void>): Promise<never> {
  // Last resort if the process exits without the async cleanup (e.g. an uncaught error in a callback).
  process.on('exit', () => {
    for (const child of children)
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.error(`\n${signal}: cleaning up`);
      void runCleanups().finally(() => process.exit(130));
    });
  }
  let code = 0;
  try {
    await bench(options());
  } catch (error) {
    console.error(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : error}`);
    code = 1;
  } finally {
    await runCleanups();
  }
  process.exit(code);
}

// ---------------------------------------------------------------------------------------------
// Build.

/** Newest modification time of the files under a directory (0 when it does not exist). */
function newestMtime(dir: string): number {
  let newest = 0;
  try {
    for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
      if (entry.isFile() && !entry.name.endsWith('.test.ts'))
        newest = Math.max(newest, statSync(path.join(entry.parentPath, entry.name)).mtimeMs);
    }
  } catch {
    // missing directory
  }
  return newest;
}

export interface BuildTarget {
  /** The Nx project to build. */
  project: string;
  /** Absolute paths of the files the run needs. */
  required: string[];
  /** Project directories (from the root) whose `src/` newer than `dist/` is worth a note. */
  sources: string[];
  force: boolean;
}

/**
 * Builds `project` (`npx nx run <project>:build`, which builds its libs first) when one of the
 * `required` files is missing or `force` is set. Otherwise only says which of the `sources`
 * projects changed since their last build. A build that exits non-zero but emitted the required
 * files (tsc does on type errors) is benchmarked, with a warning.
 */
export function ensureBuild({ project, required, sources, force }: BuildTarget): void {
  const built = () => required.every((file) => existsSync(file));
  if (built() && !force) {
    const stale = sources.filter(
      (dir) => newestMtime(path.join(ROOT, dir, 'src')) > newestMtime(path.join(ROOT, dir, 'dist')),
    );
    if (stale.length)
      log(
        `note: ${stale.join(', ')} changed since the last build; run with --build to measure the current source`,
      );
    return;
  }
  log(`building ${project} and its libs (npx nx run ${project}:build)`);
  const result = spawnSync('npx', ['nx', 'run', `${project}:build`, '--output-style=static'], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  if (result.status !== 0) {
    // tsc emits JavaScript even when it reports type errors: benchmark what was emitted, loudly.
    const missing = required.filter((file) => !existsSync(file));
    if (missing.length)
      throw new Error(
        `build failed (exit ${result.status}) and ${missing.map((f) => path.relative(ROOT, f)).join(', ')} is missing`,
      );
    log(`WARNING: the build exited with ${result.status}; benchmarking the JavaScript it emitted anyway`);
  }
}

// ---------------------------------------------------------------------------------------------
// Throw-away database.

export interface BenchDatabase {
  /** The `@platform/db` config of the fresh schema (`poolMax` small: the bench's own connection). */
  config: DatabaseConfig & { url: string };
  /** `postgres`: the server DATABASE_URL names; `local`: the repository's local PostgreSQL server. */
  kind: 'postgres' | 'local';
}

/**
 * A database for one run: a fresh schema `<name>_bench_<random>` of the PostgreSQL `databaseUrl`
 * names, or else of the local PostgreSQL server (started or joined, left at the end), created now
 * and dropped at the end.
 */
export async function throwAwayDatabase(
  name: string,
  databaseUrl: string | undefined,
): Promise<BenchDatabase> {
  let url = databaseUrl;
  if (!url) {
    const server = await ensureLocalServer({ dataDir: localDataDir(process.env.DATA_DIR) });
    onCleanup(() => server.release());
    url = server.url;
  }
  const config = { url, schema: `${name}_bench_${randomBytes(4).toString('hex')}`, poolMax: 2 };
  // Created here rather than by the first migration, so a name that exists already fails the run.
  const database = await openDatabase(config);
  try {
    await sql`create schema ${sql.id(config.schema)}`.execute(database.db);
  } finally {
    await database.close();
  }
  onCleanup(async () => {
    await dropSchema(config.url, config.schema);
    log(`dropped schema ${config.schema}`);
  });
  return { config, kind: databaseUrl ? 'postgres' : 'local' };
}

/** The environment of a service (or its command line) on that database: ours, with its DB variables. */
export function databaseEnv(
  config: BenchDatabase['config'],
  extra: NodeJS.ProcessEnv = {},
): NodeJS.ProcessEnv {
  return { ...process.env, DB_SCHEMA: config.schema, DATABASE_URL: config.url, ...extra };
}

/** What every report says of its database; each benchmark adds its counts. */
export interface DatabaseInfo {
  kind: BenchDatabase['kind'];
  schema: string;
  /** `select version()`. */
  version: string;
}

/**
 * What every report says of its database, once the benchmark has seeded it. PostgreSQL's autovacuum
 * analyzes freshly loaded tables within a minute: they are analyzed now, so the plans do not change
 * halfway through the run.
 */
export async function analyzedDatabaseInfo<DB>(
  db: Kysely<DB>,
  database: BenchDatabase,
): Promise<DatabaseInfo & { analyzed: true }> {
  await sql`analyze`.execute(db);
  const { rows } = await sql<{ version: string }>`select version() as version`.execute(db);
  return { kind: database.kind, schema: database.config.schema, version: rows[0].version, analyzed: true };
}

/** The database section of a report: no data directory, no password. */
export type ReportedDatabase<Info extends DatabaseInfo> = Info & { url: string };

export const reportedDatabase = <Info extends DatabaseInfo>(
  info: Info,
  databaseUrl: string | undefined,
): ReportedDatabase<Info> => ({
  ...info,
  url: databaseUrl ? databaseUrl.replace(/\/\/[^@/]*@/, '//***@') : 'the local PostgreSQL server',
});

// ---------------------------------------------------------------------------------------------
// Processes.

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

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface NodeProcess {
  child: ChildProcessByStdio<null, Readable, Readable>;
  pid: number;
  exited: Promise<Exit>;
  /** The last 8,000 characters of its stdout and stderr. */
  output(): string;
}

/** Starts `node args...` and remembers it for cleanup; keeps the tail of its output for errors. */
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
  const exited = new Promise<Exit>((resolve) =>
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
  mkdirSync(RESULTS_DIR, { recursive: true });
  const profile = cpuProfile
    ? ['--cpu-prof', `--cpu-prof-dir=${RESULTS_DIR}`, `--cpu-prof-name=${cpuProfile}`]
    : [];
  const proc = startNode(name, [...profile, script], {
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

export async function waitForHttp(
  name: string,
  proc: NodeProcess,
  url: string,
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
      const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
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

// ---------------------------------------------------------------------------------------------
// /proc readings (Linux; nulls elsewhere).

export interface Memory {
  rssMiB: number | null;
  hwmMiB: number | null;
}

/** VmRSS / VmHWM of a process in MiB. */
export function memory(pid: number): Memory {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
    return { rssMiB: round(kib('VmRSS') / 1024, 1), hwmMiB: round(kib('VmHWM') / 1024, 1) };
  } catch {
    return { rssMiB: null, hwmMiB: null };
  }
}

const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100;

/** User + system CPU seconds from the text of `/proc/<pid>/stat`. */
function statCpuSeconds(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields from #3 (state) on
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK; // #14 utime, #15 stime
}

/** CPU seconds (user + system) a process has used so far. */
function cpuSeconds(pid: number): number | null {
  try {
    return statCpuSeconds(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

/** CPU seconds all processes of the machine have used so far (/proc/stat). */
function machineBusySeconds(): number | null {
  try {
    const [user, nice, system, , , irq, softirq, steal] = readFileSync('/proc/stat', 'utf8')
      .split('\n')[0]
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
    return (user + nice + system + irq + softirq + (steal || 0)) / CLK_TCK;
  } catch {
    return null;
  }
}

/** CPU seconds per pid of every local PostgreSQL process (the server the service talks to on loopback). */
function postgresCpu(): Map<string, number> {
  const byPid = new Map<string, number>();
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return byPid;
  }
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) !== 'postgres') continue;
      byPid.set(pid, statCpuSeconds(stat));
    } catch {
      // gone meanwhile
    }
  }
  return byPid;
}

/** The pid of every process whose parent is `parent` (from /proc). */
export function childrenOf(parent: number): number[] {
  const children: number[] = [];
  for (const name of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // Field 4 (ppid) comes after the command name, which is in parentheses and may hold spaces.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === parent) children.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return children;
}

/**
 * Pins the load generator (this process: autocannon runs in it) to CPU 0 and the given server
 * processes (every thread of each) to the other CPUs, so that the servers measured share only
 * their own cores and the load generator's work (parsing each response, headers included) is not
 * counted against the server that sends more of it. A process forked later by a pinned one (a
 * PostgreSQL backend of a pinned postmaster) inherits its CPUs. Returns the servers' CPU list, or
 * null when the machine has a single CPU or `taskset` is missing (nothing pinned then).
 */
export function pinProcesses(serverPids: number[]): string | null {
  // Every CPU of the machine (availableParallelism would give this process's, once pinned).
  const cpus = os.cpus().length;
  if (cpus < 2) return null;
  const servers = cpus === 2 ? '1' : `1-${cpus - 1}`;
  if (!setCpus('0', process.pid)) return null;
  for (const pid of serverPids) setCpus(servers, pid);
  return servers;
}

/** Undoes `pinProcesses`: this process and the given ones may run on every CPU again. */
export function unpinProcesses(pids: number[]): void {
  const all = `0-${os.cpus().length - 1}`;
  for (const pid of [process.pid, ...pids]) setCpus(all, pid);
}

/** Sets the CPUs of every thread of `pid` (`taskset`); false when that failed. */
function setCpus(list: string, pid: number): boolean {
  return spawnSync('taskset', ['-a', '-p', '-c', list, String(pid)], { stdio: 'ignore' }).status === 0;
}

function cpuSince(before: Map<string, number>, after: Map<string, number>): number {
  let total = 0;
  for (const [pid, seconds] of after) total += seconds - (before.get(pid) ?? 0);
  return total;
}

// ---------------------------------------------------------------------------------------------
// Baseline: a bare Fastify server (baseline.ts) answering one route from memory with the exact
// bytes and headers the service answered.

/**
 * An entry point of this folder (baseline.ts by default, or bare.ts) as plain JavaScript in `dir`:
 * baselines run on bare Node, without the TypeScript loader (tsx adds some 30 MiB to a process),
 * so their figures are Fastify's (and pg's) alone.
 */
export function compileEntry(dir: string, source = BASELINE_SOURCE): string {
  const { outputText } = ts.transpileModule(readFileSync(source, 'utf8'), {
    fileName: source,
    compilerOptions: {
      module: ts.ModuleKind.CommonJS,
      target: ts.ScriptTarget.ES2022,
      esModuleInterop: true,
    },
  });
  const file = path.join(dir, path.basename(source).replace(/\.ts$/, '.js'));
  writeFileSync(file, outputText);
  return file;
}

/**
 * Starts the baseline in a child process for `route`, serving `sample` (a `request()` answer of the
 * service): its body bytes and the response headers named in `headerNames` that it has. Checks that
 * the baseline answers the same bytes. Returns the child and the route's URL.
 */
export async function startBaseline(
  route: string,
  sample: Answer<unknown>,
  headerNames: string[],
  requestInit: RequestInit = {},
): Promise<NodeProcess & { url: string }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-baseline-'));
  onCleanup(() => rmSync(dir, { recursive: true, force: true }));
  const payloadFile = path.join(dir, 'payload.json');
  const headers: Record<string, string> = {};
  for (const name of headerNames) {
    const value = sample.response.headers.get(name);
    if (value !== null) headers[name] = value;
  }
  const payload: BaselinePayload = { route, body: sample.bytes.toString('base64'), headers };
  writeFileSync(payloadFile, JSON.stringify(payload));
  const port = await freePort();
  const proc = startNode('baseline', [compileEntry(dir), payloadFile], {
    ...process.env,
    PORT: String(port),
    // The compiled file lives in a temporary directory: it finds Fastify where the bench does.
    NODE_PATH: path.resolve(require.resolve('fastify/package.json'), '../..'),
  });
  const url = `http://127.0.0.1:${port}${route}`;
  await waitForHttp('baseline', proc, url);
  const check = await request(url, requestInit);
  if (!check.bytes.equals(sample.bytes)) throw new Error('baseline body differs from the service body');
  return { ...proc, url };
}

// ---------------------------------------------------------------------------------------------
// Load.

/** One request driven by autocannon against one server process. */
export interface Scenario {
  name: string;
  label: string;
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** The server's process. */
  pid: number;
  /** Size of one response body. */
  bytes: number;
  /** Items in one response. */
  items: number;
}

export interface ScenarioResult {
  name: string;
  label: string;
  method: 'GET' | 'POST';
  url: string;
  responseBytes: number | null;
  responseItems: number;
  reqPerSec: number;
  latencyMs: Pick<autocannon.Histogram, 'mean' | 'p50' | 'p90' | 'p97_5' | 'p99' | 'p99_9' | 'max'>;
  throughputBytesPerSec: number;
  serverCpuMsPerRequest: number | null;
  serverCpuPercentOfOneCore: number | null;
  postgresCpuMsPerRequest: number | null;
  loadGeneratorCpuPercentOfOneCore: number | null;
  otherCpuPercentOfOneCore: number | null;
  requestsCompleted: number;
  requestsSent: number;
  status2xx: number;
  non2xx: number;
  statusCodes: Record<string, number>;
  errors: number;
  timeouts: number;
  resets: number;
  warmup: {
    reqPerSec: number;
    status2xx: number;
    requestsSent: number;
    non2xx: number;
    errors: number;
  } | null;
  memoryBefore: Memory;
  memoryAfter: Memory;
  autocannon: Pick<autocannon.Result, 'requests' | 'latency' | 'throughput' | 'duration'>;
  /** req/s ÷ the baseline's (the first scenario's) req/s. */
  ratioToBaseline: number | null;
}

function autocannonRun(
  scenario: Scenario,
  connections: number,
  duration: number,
): Promise<autocannon.Result> {
  return autocannon({
    url: scenario.url,
    method: scenario.method ?? 'GET',
    headers: scenario.headers,
    body: scenario.body,
    connections,
    duration,
    timeout: 10,
  });
}

/**
 * Runs each scenario after a warm-up, one after the other, and returns one record each:
 * autocannon's figures, the server's CPU and memory, PostgreSQL's CPU, the load generator's and
 * everyone else's CPU, and the ratio of req/s to the first scenario (the baseline).
 */
export async function runScenarios(
  scenarios: Scenario[],
  opts: BenchOptions<never>,
): Promise<ScenarioResult[]> {
  const results: ScenarioResult[] = [];
  for (const scenario of scenarios) {
    log(
      `${scenario.name}: ${opts.warmup}s warm-up, ${opts.duration}s measured, ${opts.connections} connections`,
    );
    const warm = opts.warmup > 0 ? await autocannonRun(scenario, opts.connections, opts.warmup) : null;
    const before = memory(scenario.pid);
    const cpuBefore = cpuSeconds(scenario.pid);
    const ownCpuBefore = process.cpuUsage();
    const busyBefore = machineBusySeconds();
    const pgBefore = postgresCpu();
    const result = await autocannonRun(scenario, opts.connections, opts.duration);
    const busyAfter = machineBusySeconds();
    const pgCpu = cpuSince(pgBefore, postgresCpu());
    const ownCpu = process.cpuUsage(ownCpuBefore);
    const cpuAfter = cpuSeconds(scenario.pid);
    const serverCpu = cpuBefore === null || cpuAfter === null ? null : cpuAfter - cpuBefore;
    const busy = busyBefore === null || busyAfter === null ? null : busyAfter - busyBefore;
    const ownCpuSeconds = (ownCpu.user + ownCpu.system) / 1e6;
    const after = memory(scenario.pid);
    const requests = Math.max(1, result.requests.total);
    results.push({
      name: scenario.name,
      label: scenario.label,
      method: scenario.method ?? 'GET',
      url: scenario.url,
      responseBytes: scenario.bytes ?? null,
      responseItems: scenario.items,
      reqPerSec: result.requests.mean,
      latencyMs: {
        mean: result.latency.mean,
        p50: result.latency.p50,
        p90: result.latency.p90,
        p97_5: result.latency.p97_5,
        p99: result.latency.p99,
        p99_9: result.latency.p99_9,
        max: result.latency.max,
      },
      throughputBytesPerSec: result.throughput.mean,
      // CPU the server process used during the measured run: per request, and as a share of one core.
      serverCpuMsPerRequest: serverCpu === null ? null : round((serverCpu * 1000) / requests, 3),
      serverCpuPercentOfOneCore: serverCpu === null ? null : round((serverCpu / result.duration) * 100, 1),
      // Local PostgreSQL processes (all of them: other users of the server count too).
      postgresCpuMsPerRequest: round((pgCpu * 1000) / requests, 3),
      loadGeneratorCpuPercentOfOneCore: round((ownCpuSeconds / result.duration) * 100, 1),
      // Everything else on the machine during the run (other users' work skews the figures).
      otherCpuPercentOfOneCore:
        serverCpu === null || busy === null
          ? null
          : round(Math.max(0, (busy - serverCpu - ownCpuSeconds - pgCpu) / result.duration) * 100, 1),
      requestsCompleted: result.requests.total,
      requestsSent: result.requests.sent,
      status2xx: result['2xx'],
      non2xx: result.non2xx,
      statusCodes: Object.fromEntries(
        Object.entries(result.statusCodeStats ?? {}).map(([code, s]) => [code, s.count]),
      ),
      errors: result.errors,
      timeouts: result.timeouts,
      resets: result.resets,
      warmup: warm
        ? {
            reqPerSec: warm.requests.mean,
            status2xx: warm['2xx'],
            requestsSent: warm.requests.sent,
            non2xx: warm.non2xx,
            errors: warm.errors,
          }
        : null,
      memoryBefore: before,
      memoryAfter: after,
      autocannon: {
        requests: result.requests,
        latency: result.latency,
        throughput: result.throughput,
        duration: result.duration,
      },
      ratioToBaseline: null,
    });
  }
  const baselineRps = results[0].reqPerSec;
  for (const r of results) r.ratioToBaseline = round(r.reqPerSec / baselineRps, 3);
  return results;
}

export interface CounterCheck {
  added: number;
  answered2xx: number;
  sent: number;
  consistent: boolean;
}

/**
 * A write scenario checked against a counter it increments (`before` → `after`, warm-up included):
 * every 2xx must have added one. Requests still in flight when autocannon stops are processed by the
 * service but never counted as answered, so a correct counter lands between the 2xx answered and
 * the requests sent.
 */
export function counterCheck(before: number, after: number, r: ScenarioResult): CounterCheck {
  const answered2xx = (r.warmup?.status2xx ?? 0) + r.status2xx;
  const sent = (r.warmup?.requestsSent ?? 0) + r.requestsSent;
  const added = after - before;
  return { added, answered2xx, sent, consistent: added >= answered2xx && added <= sent };
}

/**
 * The counter the write scenario named `scenario` increments, read once the last run's in-flight
 * requests have finished, and checked against that scenario's writes (see `counterCheck`).
 */
export async function counterAfterRun(
  results: ScenarioResult[],
  scenario: string,
  counter: { before: number; read: () => Promise<number> },
): Promise<CounterCheck & { after: number }> {
  await sleep(500); // let the in-flight requests of the last run finish
  const after = await counter.read();
  return { after, ...counterCheck(counter.before, after, resultOf(results, scenario)) };
}

const resultOf = (results: ScenarioResult[], name: string): ScenarioResult => {
  const result = results.find((r) => r.name === name);
  if (!result) throw new Error(`no scenario ${name}`);
  return result;
};

/** How many times more requests per second scenario `a` answered than scenario `b`. */
export const reqPerSecRatio = (results: ScenarioResult[], a: string, b: string): number | null =>
  round(resultOf(results, a).reqPerSec / resultOf(results, b).reqPerSec, 3);

// ---------------------------------------------------------------------------------------------
// Report.

export interface ReportHead {
  startedAt: string;
  finishedAt: string;
  /** Short hash, `(with local changes)` when the measured paths have some; null outside git. */
  commit: string | null;
  machine: {
    cpus: number;
    cpuModel: string | undefined;
    memoryGiB: number | null;
    platform: string;
    node: string;
    note: string;
    loadAverageAtStart: (number | null)[];
    loadAverageAtEnd: (number | null)[];
  };
  /** The benchmark's own options, then duration, connections and warm-up. */
  options: Record<string, number>;
}

export interface ServiceReport {
  pid: number;
  memoryIdle: Memory;
  memoryEnd: Memory;
  warnOrErrorLogTail: string | null;
}

/** What every report holds; each benchmark adds its own checks. */
export interface Report<Info extends DatabaseInfo = DatabaseInfo> extends ReportHead {
  database: ReportedDatabase<Info>;
  service: ServiceReport;
  cpuProfile: string | null;
  scenarios: ScenarioResult[];
}

/**
 * The report's common part: times, commit (marked when the project or the libs have local changes),
 * machine, the numeric options (the benchmark's own, then duration, connections and warm-up), the
 * database and the service.
 */
export function reportHead<Own extends string, Info extends DatabaseInfo>({
  startedAt,
  loadAtStart,
  project,
  opts,
  database,
  service,
}: {
  startedAt: Date;
  loadAtStart: (number | null)[];
  /** The Nx project measured, under apps/. */
  project: string;
  opts: BenchOptions<Own>;
  database: Info;
  service: Service;
}): ReportHead & Pick<Report<Info>, 'database' | 'service'> {
  // benchOptions fills the numbers first, in this order.
  const options = Object.fromEntries(
    Object.entries(opts).filter((option): option is [string, number] => typeof option[1] === 'number'),
  );
  const paths = [`apps/${project}`, 'libs'];
  mkdirSync(RESULTS_DIR, { recursive: true });
  const git = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' });
  const dirty = spawnSync('git', ['status', '--porcelain', '--', ...paths], { cwd: ROOT, encoding: 'utf8' });
  return {
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    commit:
      git.status === 0 ? git.stdout.trim() + (dirty.stdout.trim() ? ' (with local changes)' : '') : null,
    machine: {
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model,
      memoryGiB: round(os.totalmem() / 2 ** 30, 1),
      platform: `${os.type()} ${os.release()} ${os.arch()}`,
      node: process.version,
      note: 'load generator (autocannon, in the bench process), service and baseline share these cores on loopback',
      loadAverageAtStart: loadAtStart,
      loadAverageAtEnd: loadAverage(),
    },
    options,
    database: reportedDatabase(database, opts.databaseUrl),
    service: serviceReport(service),
  };
}

/** The service's section of a report: its memory at idle and at the end, and what it logged. */
export function serviceReport(service: Service): ServiceReport {
  const output = service.output();
  return {
    pid: service.pid,
    memoryIdle: service.memoryIdle,
    memoryEnd: memory(service.pid),
    warnOrErrorLogTail: output.trim() ? output.slice(-4000) : null,
  };
}

/** Writes the report to `results/<name>.json` and returns the file. */
export function writeReport(name: string, report: Report): string {
  const file = path.join(RESULTS_DIR, `${name}.json`);
  writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
  return file;
}

/**
 * Prints the report: a title line (`<title> — <database> (<version>), <seeded>, ...`), the machine,
 * the scenario table, the caller's `notes` lines, the service's memory and the warnings.
 */
export function printReport(
  report: Report,
  file: string,
  { title, seeded, notes = [] }: { title: string; seeded: string; notes?: string[] },
): void {
  const { database: db, machine, options: o } = report;
  console.log('');
  console.log(
    `${title} — ${db.kind === 'postgres' ? 'PostgreSQL' : 'the local PostgreSQL'} (${db.version.split(' on ')[0].split(',')[0]}), ` +
      `${seeded}, ${o.connections} connections, ${o.duration}s per scenario after ${o.warmup}s warm-up`,
  );
  console.log(
    `machine: ${machine.cpus} × ${machine.cpuModel}, ${machine.memoryGiB} GiB, ${machine.platform}, Node ${machine.node}; ${machine.note}`,
  );
  console.log(
    `load average (1/5/15 min) at start ${machine.loadAverageAtStart.join(' ')}, at end ${machine.loadAverageAtEnd.join(' ')}`,
  );
  console.log('');
  const header = [
    'scenario',
    'req/s',
    'p50 ms',
    'p99 ms',
    'vs baseline',
    'srv CPU ms/req',
    'pg CPU ms/req',
    'non-2xx',
    'errors',
    'body KiB',
    'RSS MiB before→after (peak)',
  ];
  const rows = report.scenarios.map((r) => [
    r.label,
    r.reqPerSec.toFixed(0),
    String(r.latencyMs.p50),
    String(r.latencyMs.p99),
    r.ratioToBaseline === null ? 'n/a' : `${r.ratioToBaseline.toFixed(3)}×`,
    r.serverCpuMsPerRequest === null ? '-' : r.serverCpuMsPerRequest.toFixed(2),
    r.postgresCpuMsPerRequest === null || r.name === 'baseline' ? '-' : r.postgresCpuMsPerRequest.toFixed(2),
    String(r.non2xx),
    r.timeouts ? `${r.errors} (${r.timeouts} t/o)` : String(r.errors),
    r.responseBytes === null ? '-' : (r.responseBytes / 1024).toFixed(1),
    `${r.memoryBefore.rssMiB}→${r.memoryAfter.rssMiB} (${r.memoryAfter.hwmMiB})`,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of rows) console.log(line(row));
  console.log('');
  for (const note of notes) console.log(note);
  console.log(
    `service RSS: ${report.service.memoryIdle.rssMiB} MiB idle after start → ${report.service.memoryEnd.rssMiB} MiB at the end, peak ${report.service.memoryEnd.hwmMiB} MiB`,
  );
  const bad = report.scenarios.filter((r) => r.non2xx || r.errors || r.timeouts);
  for (const r of bad) {
    console.log(
      `WARNING: ${r.name}: ${r.non2xx} non-2xx (status codes ${JSON.stringify(r.statusCodes)}), ${r.errors} errors of which ${r.timeouts} timeouts (10 s)`,
    );
  }
  const busy = report.scenarios.filter((r) => (r.otherCpuPercentOfOneCore ?? 0) > 15);
  if (busy.length) {
    console.log(
      `WARNING: other processes used CPU during ${busy.map((r) => `${r.name} (${r.otherCpuPercentOfOneCore}% of a core)`).join(', ')}; those figures are skewed`,
    );
  }
  if (report.service.warnOrErrorLogTail)
    console.log(`WARNING: the service logged at warn level or above (tail in the JSON report)`);
  console.log(`full figures: ${path.relative(ROOT, file)}`);
  if (report.cpuProfile) console.log(`service CPU profile (written when it stops): ${report.cpuProfile}`);
}
