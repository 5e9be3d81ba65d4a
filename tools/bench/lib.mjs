// Helpers shared by the hand-run benchmarks of this folder (run.mjs: microblog-api, social.mjs:
// social-api): options, clean-up on exit or Ctrl-C, builds, child processes, /proc readings, the
// bare Fastify baseline, the autocannon runs and the report. See README.md next to this file.
//
// Also the baseline server's entry point: `node lib.mjs --serve-baseline <payload file>`.
import { spawn, spawnSync } from 'node:child_process';
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
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

export { sleep };

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(HERE, '../..');
export const RESULTS_DIR = path.join(HERE, 'results');
export const require = createRequire(import.meta.url);

export const log = (message) => console.error(`[bench] ${message}`);

export const stamp = (date) => date.toISOString().replace(/[:.]/g, '-');

export const round = (n, digits = 0) =>
  Number.isFinite(n) ? Math.round(n * 10 ** digits) / 10 ** digits : null;

/** The 1/5/15-minute load averages (other work on the machine skews every figure; ratios less so). */
export const loadAverage = () => os.loadavg().map((n) => round(n, 2));

// ---------------------------------------------------------------------------------------------
// Options.

/** The numeric options every benchmark takes: `{name: {env, fallback, integer?, min?}}`. */
const LOAD_OPTIONS = {
  duration: { env: 'BENCH_DURATION', fallback: 10, integer: false },
  connections: { env: 'BENCH_CONNECTIONS', fallback: 50 },
  warmup: { env: 'BENCH_WARMUP', fallback: 2, integer: false, min: 0 },
};

/**
 * Parses the command line: `--duration`, `--connections`, `--warmup`, the benchmark's own numeric
 * options in `own` (same shape as LOAD_OPTIONS; each also read from its environment variable),
 * `--build`, `--cpu-prof` and `--help` (prints `usage` and exits). DATABASE_URL comes from the
 * environment.
 */
export function benchOptions(usage, own) {
  const numbers = { ...own, ...LOAD_OPTIONS };
  const { values } = parseArgs({
    options: {
      ...Object.fromEntries(Object.keys(numbers).map((name) => [name, { type: 'string' }])),
      build: { type: 'boolean', default: false },
      'cpu-prof': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    console.log(usage);
    process.exit(0);
  }
  const parsed = {};
  for (const [name, { env, fallback, integer = true, min = 1 }] of Object.entries(numbers)) {
    const raw = values[name] ?? process.env[env] ?? String(fallback);
    const value = Number(raw);
    if (!Number.isFinite(value) || value < min || (integer && !Number.isInteger(value))) {
      throw new Error(
        `--${name} must be ${integer ? 'an integer' : 'a number'} >= ${min} (got ${JSON.stringify(raw)})`,
      );
    }
    parsed[name] = value;
  }
  return {
    ...parsed,
    build: values.build,
    cpuProf: values['cpu-prof'],
    databaseUrl: process.env.DATABASE_URL || undefined,
  };
}

// ---------------------------------------------------------------------------------------------
// Clean-up: steps run last-in first-out, once, on success, error or signal.

const cleanups = [];
const children = new Set();
let cleaning;

export const onCleanup = (step) => cleanups.push(step);

function runCleanups() {
  cleaning ??= (async () => {
    while (cleanups.length) {
      const step = cleanups.pop();
      try {
        await step();
      } catch (error) {
        console.error(`cleanup: ${error instanceof Error ? error.message : error}`);
      }
    }
  })();
  return cleaning;
}

/** Runs `bench(options())` with the clean-up wired to exit, errors and signals; exits with 0 or 1. */
export async function runMain(options, bench) {
  // Last resort if the process exits without the async cleanup (e.g. an uncaught error in a callback).
  process.on('exit', () => {
    for (const child of children)
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.once(signal, () => {
      console.error(`\n${signal}: cleaning up`);
      runCleanups().finally(() => process.exit(130));
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
function newestMtime(dir) {
  let newest = 0;
  try {
    for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
      if (entry.isFile() && !entry.name.endsWith('.test.ts'))
        newest = Math.max(newest, statSync(path.join(entry.parentPath ?? entry.path, entry.name)).mtimeMs);
    }
  } catch {
    // missing directory
  }
  return newest;
}

/**
 * Builds `project` (`npx nx run <project>:build`, which builds its libs first) when one of the
 * `required` files (absolute paths) is missing or `force` is set. Otherwise only says which of the
 * `sources` projects (relative to the root) changed since their last build. A build that exits
 * non-zero but emitted the required files (tsc does on type errors) is benchmarked, with a warning.
 */
export function ensureBuild({ project, required, sources, force }) {
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

/**
 * A database for one run: a fresh schema `<name>_bench_<random>` of the PostgreSQL `databaseUrl`
 * names, or else of the local PostgreSQL server (started or joined, left at the end), created now
 * and dropped at the end. Returns the `@platform/db` config (`poolMax` small: the bench's own connection).
 */
export async function throwAwayDatabase(name, databaseUrl) {
  const { openDatabase, ensureLocalServer, localDataDir } = require('@platform/db');
  if (!databaseUrl) {
    const server = await ensureLocalServer({ dataDir: localDataDir(process.env.DATA_DIR) });
    onCleanup(() => server.release());
    databaseUrl = server.url;
  }
  const { sql } = require('kysely');
  const schema = `${name}_bench_${randomBytes(4).toString('hex')}`;
  const onAdmin = async (run) => {
    const admin = await openDatabase({ url: databaseUrl, schema: 'public', poolMax: 1 });
    try {
      await run(admin.db);
    } finally {
      await admin.close();
    }
  };
  await onAdmin((db) => sql`create schema ${sql.id(schema)}`.execute(db));
  onCleanup(() =>
    onAdmin(async (db) => {
      await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(db);
      log(`dropped schema ${schema}`);
    }),
  );
  return { url: databaseUrl, schema, poolMax: 2 };
}

/** The environment of a service (or its command line) on that database: ours, with its DB variables. */
export function databaseEnv(config, extra = {}) {
  return { ...process.env, DB_SCHEMA: config.schema, DATABASE_URL: config.url, ...extra };
}

/** The database section of a report: no data directory, no password. */
export const reportedDatabase = (db, databaseUrl) => ({
  ...db,
  url: databaseUrl ? databaseUrl.replace(/\/\/[^@/]*@/, '//***@') : 'the local PostgreSQL server',
});

// ---------------------------------------------------------------------------------------------
// Processes.

/** A free loopback port (released again before use: a tiny race, fine for a hand-run tool). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Starts `node args...` and remembers it for cleanup; keeps the tail of its output for errors. */
export function startNode(name, args, env) {
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let output = '';
  const keep = (chunk) => {
    output = (output + chunk).slice(-8000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  exited.then(() => children.delete(child));
  onCleanup(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = sleep(5000).then(() => 'timeout');
    if ((await Promise.race([exited, timer])) === 'timeout') {
      log(`${name} did not stop on SIGTERM within 5s; killing it`);
      child.kill('SIGKILL');
      await exited;
    }
  });
  return { child, exited, output: () => output };
}

/**
 * Starts a built service (`node <script>`) with `env` plus a free loopback port, `HOST=127.0.0.1` and
 * warn-level JSON logs, and waits for its `GET /readyz`. With `cpuProfile` (a file name) the service
 * writes a V8 CPU profile to results/ when it stops. Returns the process, its base URL and its
 * memory at idle.
 */
export async function startService(name, script, env, cpuProfile) {
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
  const memoryIdle = memory(proc.child.pid);
  log(`${name} ready on ${base} (pid ${proc.child.pid}, RSS ${memoryIdle.rssMiB} MiB)`);
  return { ...proc, base, memoryIdle };
}

export async function waitForHttp(name, proc, url, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  let exit;
  proc.exited.then((e) => (exit = e));
  while (Date.now() < deadline) {
    if (exit)
      throw new Error(
        `${name} exited (code ${exit.code}, signal ${exit.signal}) before answering ${url}:\n${proc.output()}`,
      );
    try {
      const response = await fetch(url, { signal: globalThis.AbortSignal.timeout(2000) });
      await response.arrayBuffer();
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`${name} did not answer ${url} within ${timeoutMs / 1000}s:\n${proc.output()}`);
}

/** `fetch`, the body as bytes and (when it has one) as JSON; a status other than `expect` throws. */
export async function request(url, init = {}, expect = 200) {
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

/** VmRSS / VmHWM of a process in MiB. */
export function memory(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
    return { rssMiB: round(kib('VmRSS') / 1024, 1), hwmMiB: round(kib('VmHWM') / 1024, 1) };
  } catch {
    return { rssMiB: null, hwmMiB: null };
  }
}

const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100;

/** CPU seconds (user + system) a process has used so far. */
function cpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields from #3 (state) on
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK; // #14 utime, #15 stime
  } catch {
    return null;
  }
}

/** CPU seconds all processes of the machine have used so far (/proc/stat). */
function machineBusySeconds() {
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
function postgresCpu() {
  const byPid = new Map();
  let pids;
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return byPid;
  }
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) !== 'postgres') continue;
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      byPid.set(pid, (Number(fields[11]) + Number(fields[12])) / CLK_TCK);
    } catch {
      // gone meanwhile
    }
  }
  return byPid;
}

function cpuSince(before, after) {
  let total = 0;
  for (const [pid, seconds] of after) total += seconds - (before.get(pid) ?? 0);
  return total;
}

// ---------------------------------------------------------------------------------------------
// Baseline: a bare Fastify server (default options, no logger, no plugins) answering one route from
// memory with the exact bytes and headers the service answered.

async function serveBaseline(payloadFile) {
  const { route, body, headers } = JSON.parse(readFileSync(payloadFile, 'utf8'));
  const payload = Buffer.from(body, 'base64');
  const { default: Fastify } = await import('fastify');
  const app = Fastify({ logger: false });
  app.get(route, (_request, reply) => {
    for (const [name, value] of Object.entries(headers)) reply.header(name, value);
    return reply.send(payload);
  });
  await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
  const stop = () => app.close().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

/**
 * Starts the baseline in a child process for `route`, serving `sample` (a `request()` answer of the
 * service): its body bytes and the response headers named in `headerNames` that it has. Checks that
 * the baseline answers the same bytes. Returns the child and the route's URL.
 */
export async function startBaseline(route, sample, headerNames, requestInit = {}) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-baseline-'));
  onCleanup(() => rmSync(dir, { recursive: true, force: true }));
  const payloadFile = path.join(dir, 'payload.json');
  const headers = {};
  for (const name of headerNames) {
    const value = sample.response.headers.get(name);
    if (value !== null) headers[name] = value;
  }
  writeFileSync(payloadFile, JSON.stringify({ route, body: sample.bytes.toString('base64'), headers }));
  const port = await freePort();
  const proc = startNode('baseline', [fileURLToPath(import.meta.url), '--serve-baseline', payloadFile], {
    ...process.env,
    PORT: String(port),
  });
  const url = `http://127.0.0.1:${port}${route}`;
  await waitForHttp('baseline', proc, url);
  const check = await request(url, requestInit);
  if (!check.bytes.equals(sample.bytes)) throw new Error('baseline body differs from the service body');
  return { ...proc, url };
}

// ---------------------------------------------------------------------------------------------
// Load.

function autocannonRun(autocannon, scenario, connections, duration) {
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
 * Runs each scenario (`{name, label, url, method?, headers?, body?, pid, bytes, items}`, `pid` = the
 * server's process) after a warm-up, one after the other, and returns one record each: autocannon's
 * figures, the server's CPU and memory, PostgreSQL's CPU (`opts.databaseUrl`), the load generator's
 * and everyone else's CPU, and the ratio of req/s to the first scenario (the baseline).
 */
export async function runScenarios(scenarios, opts) {
  const { default: autocannon } = await import('autocannon');
  const results = [];
  for (const scenario of scenarios) {
    log(
      `${scenario.name}: ${opts.warmup}s warm-up, ${opts.duration}s measured, ${opts.connections} connections`,
    );
    let warm;
    if (opts.warmup > 0) warm = await autocannonRun(autocannon, scenario, opts.connections, opts.warmup);
    const before = memory(scenario.pid);
    const cpuBefore = cpuSeconds(scenario.pid);
    const ownCpuBefore = process.cpuUsage();
    const busyBefore = machineBusySeconds();
    const pgBefore = postgresCpu();
    const result = await autocannonRun(autocannon, scenario, opts.connections, opts.duration);
    const busy = machineBusySeconds() - busyBefore;
    const pgCpu = cpuSince(pgBefore, postgresCpu());
    const ownCpu = process.cpuUsage(ownCpuBefore);
    const serverCpu = cpuSeconds(scenario.pid) - cpuBefore;
    const ownCpuSeconds = (ownCpu.user + ownCpu.system) / 1e6;
    const after = memory(scenario.pid);
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
      serverCpuMsPerRequest:
        cpuBefore === null ? null : round((serverCpu * 1000) / Math.max(1, result.requests.total), 3),
      serverCpuPercentOfOneCore: cpuBefore === null ? null : round((serverCpu / result.duration) * 100, 1),
      // Local PostgreSQL processes (all of them: other users of the server count too).
      postgresCpuMsPerRequest: round((pgCpu * 1000) / Math.max(1, result.requests.total), 3),
      loadGeneratorCpuPercentOfOneCore: round((ownCpuSeconds / result.duration) * 100, 1),
      // Everything else on the machine during the run (other users' work skews the figures).
      otherCpuPercentOfOneCore:
        cpuBefore === null || busyBefore === null
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
    });
  }
  const baselineRps = results[0].reqPerSec;
  for (const r of results) r.ratioToBaseline = round(r.reqPerSec / baselineRps, 3);
  return results;
}

/**
 * A write scenario checked against a counter it increments (`before` → `after`, warm-up included):
 * every 2xx must have added one. Requests still in flight when autocannon stops are processed by the
 * service but never counted as answered, so a correct counter lands between the 2xx answered and
 * the requests sent.
 */
export function counterCheck(before, after, r) {
  const answered2xx = (r.warmup?.status2xx ?? 0) + r.status2xx;
  const sent = (r.warmup?.requestsSent ?? 0) + r.requestsSent;
  const added = after - before;
  return { added, answered2xx, sent, consistent: added >= answered2xx && added <= sent };
}

// ---------------------------------------------------------------------------------------------
// Report.

/**
 * The report's common part: times, commit (marked when `paths` have local changes), machine, and the
 * options (the benchmark's own `optionNames`, then duration, connections and warm-up).
 */
export function reportHead({ startedAt, loadAtStart, paths, opts, optionNames }) {
  const options = Object.fromEntries([...optionNames, ...Object.keys(LOAD_OPTIONS)].map((n) => [n, opts[n]]));
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
  };
}

/** The service's section of a report: its memory at idle and at the end, and what it logged. */
export function serviceReport(service) {
  const output = service.output();
  return {
    pid: service.child.pid,
    memoryIdle: service.memoryIdle,
    memoryEnd: memory(service.child.pid),
    warnOrErrorLogTail: output.trim() ? output.slice(-4000) : null,
  };
}

/** Writes the report to `results/<name>.json` and returns the file. */
export function writeReport(name, report) {
  const file = path.join(RESULTS_DIR, `${name}.json`);
  writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
  return file;
}

/**
 * Prints the report: a title line (`<title> — <database> (<version>), <seeded>, ...`), the machine,
 * the scenario table, the caller's `notes` lines, the service's memory and the warnings.
 */
export function printReport(report, file, { title, seeded, notes = [] }) {
  const { database: db, machine, options: o } = report;
  console.log('');
  console.log(
    `${title} — ${db.kind === 'postgres' ? 'PostgreSQL' : 'the local PostgreSQL'} (${String(db.version).split(' on ')[0].split(',')[0]}), ` +
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
  const line = (cells) =>
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
  const busy = report.scenarios.filter((r) => r.otherCpuPercentOfOneCore > 15);
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

if (
  process.argv[2] === '--serve-baseline' &&
  path.resolve(process.argv[1] ?? '') === fileURLToPath(import.meta.url)
) {
  await serveBaseline(process.argv[3]);
}
