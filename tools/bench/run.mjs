#!/usr/bin/env node
// Hand-run load benchmark of microblog-api: `npm run bench [-- --posts=N --duration=S --connections=C]`.
// Seeds a throw-away database, starts the built service and a bare Fastify baseline in child
// processes, drives both with autocannon on loopback and reports every figure as a ratio to the
// baseline measured in the same run. Not a test: it never passes or fails on a threshold.
// See README.md next to this file.
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
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const APP_DIST = path.join(ROOT, 'apps/microblog-api/dist');
const DB_DIST = path.join(ROOT, 'libs/db/dist');
const RESULTS_DIR = path.join(HERE, 'results');
const require = createRequire(import.meta.url);

// ---------------------------------------------------------------------------------------------
// Baseline child: a bare Fastify server answering one route from memory with the exact bytes the
// service answered for `GET /api/microblog`.

async function serveBaseline(payloadFile) {
  const { body, contentType, link } = JSON.parse(readFileSync(payloadFile, 'utf8'));
  const payload = Buffer.from(body, 'base64');
  const { default: Fastify } = await import('fastify');
  const app = Fastify({ logger: false });
  app.get('/api/microblog', (_request, reply) => {
    reply.header('content-type', contentType);
    if (link) reply.header('link', link);
    return reply.send(payload);
  });
  await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
  const stop = () => app.close().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

// ---------------------------------------------------------------------------------------------
// Orchestrator.

function options() {
  const { values } = parseArgs({
    options: {
      posts: { type: 'string' },
      duration: { type: 'string' },
      connections: { type: 'string' },
      warmup: { type: 'string' },
      build: { type: 'boolean', default: false },
      'cpu-prof': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    console.log(`usage: npm run bench -- [--posts=10000] [--duration=10] [--connections=50] [--warmup=2] [--build]
  --posts        posts to seed (each with 0..3 replies)            env BENCH_POSTS
  --duration     seconds measured per scenario                     env BENCH_DURATION
  --connections  concurrent autocannon connections                 env BENCH_CONNECTIONS
  --warmup       seconds of unmeasured warm-up before each scenario env BENCH_WARMUP
  --build        rebuild microblog-api (and its libs) even if dist/ exists
  --cpu-prof     write a V8 CPU profile of the service to tools/bench/results/ (slows it down a little)
  DATABASE_URL   PostgreSQL to use (a fresh schema microblog_bench_<random>, dropped at the end);
                 unset: an embedded PGlite database in a temp directory, deleted at the end`);
    process.exit(0);
  }
  const num = (name, flag, env, fallback, { integer = true, min = 1 } = {}) => {
    const raw = flag ?? process.env[env] ?? String(fallback);
    const value = Number(raw);
    if (!Number.isFinite(value) || value < min || (integer && !Number.isInteger(value))) {
      throw new Error(
        `--${name} must be ${integer ? 'an integer' : 'a number'} >= ${min} (got ${JSON.stringify(raw)})`,
      );
    }
    return value;
  };
  return {
    posts: num('posts', values.posts, 'BENCH_POSTS', 10_000),
    duration: num('duration', values.duration, 'BENCH_DURATION', 10, { integer: false }),
    connections: num('connections', values.connections, 'BENCH_CONNECTIONS', 50),
    warmup: num('warmup', values.warmup, 'BENCH_WARMUP', 2, { integer: false, min: 0 }),
    build: values.build,
    cpuProf: values['cpu-prof'],
    databaseUrl: process.env.DATABASE_URL || undefined,
  };
}

/** Cleanup steps, run last-in first-out once, on success, error or signal. */
const cleanups = [];
const children = new Set();
let cleaning;

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

async function main() {
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

const log = (message) => console.error(`[bench] ${message}`);

function ensureBuild(force) {
  const built = () =>
    existsSync(path.join(APP_DIST, 'app.js')) &&
    existsSync(path.join(APP_DIST, 'main.js')) &&
    existsSync(path.join(DB_DIST, 'index.js'));
  if (built() && !force) {
    const stale = ['apps/microblog-api', 'libs/db', 'libs/http-kit', 'libs/schema'].filter(
      (project) =>
        newestMtime(path.join(ROOT, project, 'src')) > newestMtime(path.join(ROOT, project, 'dist')),
    );
    if (stale.length)
      log(
        `note: ${stale.join(', ')} changed since the last build; run with --build to measure the current source`,
      );
    return;
  }
  log('building microblog-api and its libs (npx nx run microblog-api:build)');
  const result = spawnSync('npx', ['nx', 'run', 'microblog-api:build', '--output-style=static'], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  if (result.status !== 0) {
    // tsc emits JavaScript even when it reports type errors: benchmark what was emitted, loudly.
    if (!built()) throw new Error(`build failed (exit ${result.status}) and ${APP_DIST}/main.js is missing`);
    log(`WARNING: the build exited with ${result.status}; benchmarking the JavaScript it emitted anyway`);
  }
}

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

/** A free loopback port (released again before use: a tiny race, fine for a hand-run tool). */
function freePort() {
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

/** VmRSS / VmHWM of a process in MiB (Linux /proc), or nulls elsewhere. */
function memory(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
    return { rssMiB: round(kib('VmRSS') / 1024, 1), hwmMiB: round(kib('VmHWM') / 1024, 1) };
  } catch {
    return { rssMiB: null, hwmMiB: null };
  }
}

const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100;

/** CPU seconds (user + system) a process has used so far (Linux /proc), or null elsewhere. */
function cpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields from #3 (state) on
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK; // #14 utime, #15 stime
  } catch {
    return null;
  }
}

/** CPU seconds all processes of the machine have used so far (Linux /proc/stat), or null elsewhere. */
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

const stamp = (date) => date.toISOString().replace(/[:.]/g, '-');

const round = (n, digits = 0) => (Number.isFinite(n) ? Math.round(n * 10 ** digits) / 10 ** digits : null);

/** Starts `node args...` and remembers it for cleanup; keeps the tail of its output for errors. */
function startNode(name, args, env) {
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
  cleanups.push(async () => {
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

async function waitForHttp(name, proc, url, timeoutMs = 60_000) {
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

/** Creates the schema (or temp data dir), migrates it and seeds it with the built modules, in this process. */
async function prepareDatabase(opts) {
  const { openDatabase, migrateToLatest } = require('@platform/db');
  const { sql } = require('kysely');
  const { migrations } = require(path.join(APP_DIST, 'db/migrations/index.js'));
  const { seedDemoData } = require(path.join(APP_DIST, 'posts/seed.js'));

  let config;
  if (opts.databaseUrl) {
    const schema = `microblog_bench_${randomBytes(4).toString('hex')}`;
    config = { url: opts.databaseUrl, schema, poolMax: 2 };
    cleanups.push(async () => {
      const admin = await openDatabase({ url: opts.databaseUrl, schema: 'public', poolMax: 1 });
      try {
        await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(admin.db);
        log(`dropped schema ${schema}`);
      } finally {
        await admin.close();
      }
    });
  } else {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'microblog-bench-'));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    config = { dataDir, schema: 'microblog' };
  }

  const database = await openDatabase(config);
  try {
    if (opts.databaseUrl) await sql`create schema ${sql.id(config.schema)}`.execute(database.db);
    await migrateToLatest(database.db, database.schema, migrations);
    const started = performance.now();
    const seeded = await seedDemoData(database.db, opts.posts);
    const seedSeconds = (performance.now() - started) / 1000;
    // PostgreSQL's autovacuum analyzes freshly bulk-loaded tables within a minute; do it now so the
    // plans do not change halfway through the run. PGlite has no autovacuum: the embedded service
    // keeps whatever plans it gets without statistics, so the bench leaves it that way too.
    if (database.kind === 'postgres') await sql`analyze`.execute(database.db);
    const stats = (
      await sql`select min(id) as min_id, max(id) as max_id, count(*)::int as posts,
        (select count(*)::int from replies) as replies,
        count(*) filter (where quest_topic = 'online_safety')::int as online_safety,
        version() as version from posts`.execute(database.db)
    ).rows[0];
    // "Near the oldest": the page just above the 150 oldest posts (still a full page with a next link).
    const deep = (
      await sql`select id from posts order by id asc offset ${Math.min(150, opts.posts - 1)} limit 1`.execute(
        database.db,
      )
    ).rows[0];
    return {
      kind: database.kind,
      schema: config.schema,
      dataDir: config.dataDir,
      version: stats.version,
      posts: stats.posts,
      replies: stats.replies,
      onlineSafetyPosts: stats.online_safety,
      newestId: stats.max_id,
      oldestId: stats.min_id,
      deepBefore: deep.id,
      seedSeconds: round(seedSeconds, 1),
      analyzed: database.kind === 'postgres',
      seededReplies: seeded.replies,
    };
  } finally {
    await database.close();
  }
}

async function getJson(url) {
  const response = await fetch(url);
  const bytes = Buffer.from(await response.arrayBuffer());
  if (!response.ok)
    throw new Error(`GET ${url} answered ${response.status}: ${bytes.toString('utf8').slice(0, 500)}`);
  return { response, bytes, json: JSON.parse(bytes.toString('utf8')) };
}

async function likesOf(base, postId) {
  const { json } = await getJson(`${base}/api/microblog?before=${postId + 1}&limit=1`);
  if (json[0]?.id !== postId) throw new Error(`post ${postId} not found`);
  return json[0].reactions.like;
}

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

async function bench(opts) {
  const startedAt = new Date();
  // Other work on the machine skews every figure (ratios less so): recorded, and shown in the report.
  const loadAtStart = os.loadavg().map((n) => round(n, 2));
  ensureBuild(opts.build);
  const { default: autocannon } = await import('autocannon');

  log(
    `seeding ${opts.posts} posts into ${opts.databaseUrl ? 'PostgreSQL (fresh schema)' : 'embedded PGlite (temp dir)'} ...`,
  );
  const db = await prepareDatabase(opts);
  log(`seeded ${db.posts} posts, ${db.replies} replies in ${db.seedSeconds}s (not measured)`);

  // The service, as it runs in production, but quiet and with writes effectively unlimited.
  const servicePort = await freePort();
  const serviceEnv = {
    ...process.env,
    PORT: String(servicePort),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    LOG_FORMAT: 'json',
    WRITE_RATE_LIMIT: '1000000000',
    DB_SCHEMA: db.schema,
  };
  if (opts.databaseUrl) {
    serviceEnv.DATABASE_URL = opts.databaseUrl;
    delete serviceEnv.DATA_DIR;
  } else {
    delete serviceEnv.DATABASE_URL;
    serviceEnv.DATA_DIR = db.dataDir;
  }
  mkdirSync(RESULTS_DIR, { recursive: true });
  const profile = opts.cpuProf
    ? [
        '--cpu-prof',
        `--cpu-prof-dir=${RESULTS_DIR}`,
        `--cpu-prof-name=${stamp(startedAt)}-microblog-api.cpuprofile`,
      ]
    : [];
  const service = startNode('microblog-api', [...profile, path.join(APP_DIST, 'main.js')], serviceEnv);
  const base = `http://127.0.0.1:${servicePort}`;
  await waitForHttp('microblog-api', service, `${base}/readyz`);
  const serviceIdle = memory(service.child.pid);
  log(`microblog-api ready on ${base} (pid ${service.child.pid}, RSS ${serviceIdle.rssMiB} MiB)`);

  // One look at each page before the load: sizes, and that they are what the scenario claims.
  const first = await getJson(`${base}/api/microblog`);
  const deepUrl = `${base}/api/microblog?before=${db.deepBefore}`;
  const deep = await getJson(deepUrl);
  const topicUrl = `${base}/api/microblog?topic=online_safety`;
  const topic = await getJson(topicUrl);
  if (topic.json.some((p) => p.quest_topic !== 'online_safety'))
    throw new Error('topic page holds other topics');
  const reactionPost = db.newestId;
  const reactionBody = JSON.stringify({ post_id: reactionPost, reaction_type: 'like' });
  const probe = await fetch(`${base}/api/microblog/reaction`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: reactionBody,
  });
  const probeBytes = Buffer.from(await probe.arrayBuffer());
  if (probe.status !== 200)
    throw new Error(`POST /api/microblog/reaction answered ${probe.status}: ${probeBytes}`);
  const likesBefore = await likesOf(base, reactionPost);

  // The baseline: same body bytes and content type, from memory, in its own process.
  const payloadFile = path.join(
    mkdtempSync(path.join(os.tmpdir(), 'microblog-bench-payload-')),
    'payload.json',
  );
  cleanups.push(() => rmSync(path.dirname(payloadFile), { recursive: true, force: true }));
  writeFileSync(
    payloadFile,
    JSON.stringify({
      body: first.bytes.toString('base64'),
      contentType: first.response.headers.get('content-type'),
      link: first.response.headers.get('link'),
    }),
  );
  const baselinePort = await freePort();
  const baseline = startNode('baseline', [fileURLToPath(import.meta.url), '--serve-baseline', payloadFile], {
    ...process.env,
    PORT: String(baselinePort),
  });
  const baselineBase = `http://127.0.0.1:${baselinePort}`;
  await waitForHttp('baseline', baseline, `${baselineBase}/api/microblog`);
  const check = await getJson(`${baselineBase}/api/microblog`);
  if (!check.bytes.equals(first.bytes)) throw new Error('baseline body differs from the service body');

  const scenarios = [
    {
      name: 'baseline',
      label: 'baseline: bare Fastify, same body from memory',
      url: `${baselineBase}/api/microblog`,
      pid: baseline.child.pid,
      bytes: first.bytes.length,
      items: first.json.length,
    },
    {
      name: 'first-page',
      label: 'GET /api/microblog (first page)',
      url: `${base}/api/microblog`,
      pid: service.child.pid,
      bytes: first.bytes.length,
      items: first.json.length,
    },
    {
      name: 'deep-page',
      label: `GET /api/microblog?before=${db.deepBefore} (deep)`,
      url: deepUrl,
      pid: service.child.pid,
      bytes: deep.bytes.length,
      items: deep.json.length,
    },
    {
      name: 'topic',
      label: 'GET /api/microblog?topic=online_safety',
      url: topicUrl,
      pid: service.child.pid,
      bytes: topic.bytes.length,
      items: topic.json.length,
    },
    {
      name: 'reaction',
      label: `POST /api/microblog/reaction (post ${reactionPost})`,
      url: `${base}/api/microblog/reaction`,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: reactionBody,
      pid: service.child.pid,
      bytes: probeBytes.length,
      items: 1,
    },
  ];

  const results = [];
  const reactionCounts = { answered2xx: 0, sent: 0 };
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
    if (scenario.name === 'reaction') {
      reactionCounts.answered2xx = (warm?.['2xx'] ?? 0) + result['2xx'];
      reactionCounts.sent = (warm?.requests.sent ?? 0) + result.requests.sent;
    }
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
      // Local PostgreSQL processes (all of them: other users of the server count too); the embedded
      // database runs inside the service process and is part of serverCpu instead.
      postgresCpuMsPerRequest: opts.databaseUrl
        ? round((pgCpu * 1000) / Math.max(1, result.requests.total), 3)
        : null,
      loadGeneratorCpuPercentOfOneCore: round((ownCpuSeconds / result.duration) * 100, 1),
      // Everything else on the machine during the run (other users' work skews the figures).
      otherCpuPercentOfOneCore:
        cpuBefore === null || busyBefore === null
          ? null
          : round(Math.max(0, (busy - serverCpu - ownCpuSeconds - pgCpu) / result.duration) * 100, 1),
      requestsCompleted: result.requests.total,
      status2xx: result['2xx'],
      non2xx: result.non2xx,
      statusCodes: Object.fromEntries(
        Object.entries(result.statusCodeStats ?? {}).map(([code, s]) => [code, s.count]),
      ),
      errors: result.errors,
      timeouts: result.timeouts,
      resets: result.resets,
      warmup: warm ? { reqPerSec: warm.requests.mean, non2xx: warm.non2xx, errors: warm.errors } : null,
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

  // A reaction is a counter: every 2xx must have added one like. Requests still in flight when
  // autocannon stops are processed by the service but not counted as answered, so the likes added
  // lie between the answered 2xx and the requests sent (at most `connections` more per run).
  await sleep(500); // let the in-flight requests of the last run finish
  const likesAfter = await likesOf(base, reactionPost);
  const added = likesAfter - likesBefore;
  const reactionCheck = {
    postId: reactionPost,
    likesBefore,
    likesAfter,
    added,
    answered2xx: reactionCounts.answered2xx,
    sent: reactionCounts.sent,
    consistent: added >= reactionCounts.answered2xx && added <= reactionCounts.sent,
  };
  const serviceEnd = memory(service.child.pid);
  const serviceOutput = service.output();

  const baselineRps = results[0].reqPerSec;
  for (const r of results) r.ratioToBaseline = round(r.reqPerSec / baselineRps, 3);
  const byName = Object.fromEntries(results.map((r) => [r.name, r]));
  const deepToFirst = round(byName['deep-page'].reqPerSec / byName['first-page'].reqPerSec, 3);

  const machine = {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    memoryGiB: round(os.totalmem() / 2 ** 30, 1),
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    note: 'load generator (autocannon, in the bench process), service and baseline share these cores on loopback',
  };
  const git = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' });
  const dirty = spawnSync('git', ['status', '--porcelain', '--', 'apps/microblog-api', 'libs'], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  const report = {
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    commit:
      git.status === 0 ? git.stdout.trim() + (dirty.stdout.trim() ? ' (with local changes)' : '') : null,
    machine: {
      ...machine,
      loadAverageAtStart: loadAtStart,
      loadAverageAtEnd: os.loadavg().map((n) => round(n, 2)),
    },
    options: {
      posts: opts.posts,
      duration: opts.duration,
      connections: opts.connections,
      warmup: opts.warmup,
    },
    database: {
      ...db,
      dataDir: undefined,
      url: opts.databaseUrl ? opts.databaseUrl.replace(/\/\/[^@/]*@/, '//***@') : undefined,
    },
    service: {
      pid: service.child.pid,
      memoryIdle: serviceIdle,
      memoryEnd: serviceEnd,
      warnOrErrorLogTail: serviceOutput.trim() ? serviceOutput.slice(-4000) : null,
    },
    deepToFirstPageRatio: deepToFirst,
    cpuProfile: opts.cpuProf
      ? path.relative(ROOT, path.join(RESULTS_DIR, `${stamp(startedAt)}-microblog-api.cpuprofile`))
      : null,
    reactionCheck,
    scenarios: results,
  };

  const file = path.join(RESULTS_DIR, `${stamp(startedAt)}.json`);
  writeFileSync(file, JSON.stringify(report, null, 2) + '\n');

  printReport(report, file);
}

function printReport(report, file) {
  const { database: db, machine, options: o } = report;
  console.log('');
  console.log(
    `microblog-api bench — ${db.kind === 'postgres' ? 'PostgreSQL' : 'embedded PGlite'} (${String(db.version).split(' on ')[0].split(',')[0]}), ` +
      `${db.posts} posts / ${db.replies} replies, ${o.connections} connections, ${o.duration}s per scenario after ${o.warmup}s warm-up`,
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
  console.log(`deep page / first page req/s: ${report.deepToFirstPageRatio?.toFixed(3) ?? 'n/a'}`);
  const rc = report.reactionCheck;
  console.log(
    `reaction counter (warm-up included): ${rc.likesBefore} → ${rc.likesAfter} likes, +${rc.added} for ${rc.answered2xx} answered 2xx / ${rc.sent} sent` +
      (rc.consistent ? ' (consistent: no lost counts)' : ' (INCONSISTENT: counts lost or extra)'),
  );
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

if (process.argv[2] === '--serve-baseline') {
  await serveBaseline(process.argv[3]);
} else {
  await main();
}
