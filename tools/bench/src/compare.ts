// Side-by-side mode: `npm run bench:compare [-- --only=microblog,workspace --rounds=2 --duration=5]`.
// Each hot read route of each service against a bare Fastify+pg route (bare.ts) that runs the SAME
// SQL (captured from PostgreSQL's statement log while the service answered the route once: same
// text, same parameters) and answers the same JSON, in the same run, interleaved (bare, service,
// bare, service, ...), printed as ratios: service req/s ÷ bare req/s, and both p99s. Per route it
// also prints the statements per request (pg_stat_statements calls over 200 requests, service and
// bare) and the rows written (pg_stat_user_tables n_tup_ins + n_tup_upd + n_tup_del over the same
// 200 requests). It runs on a bench-only PostgreSQL server (the local-server code of @platform/db
// on its own data directory, with pg_stat_statements preloaded), never on the shared one.
// Not a test: it never passes or fails on a threshold. See README.md in tools/bench.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureLocalServer, migrateToLatest, openDatabase, type LocalServer } from '@platform/db';
import { migrations as microblogMigrations } from '@platform/microblog-api/db/migrations';
import type { MicroblogDatabase } from '@platform/microblog-api/db/schema';
import { seedDemoData } from '@platform/microblog-api/posts/seed';
import autocannon from 'autocannon';
import { Client } from 'pg';
import type { BarePayload, CapturedStatement } from './bare';
import * as lib from './lib';
import { benchUser, fake } from './social-setup';

const SERVICES = ['social', 'microblog', 'workspace'] as const;
type ServiceName = (typeof SERVICES)[number];

/** Requests over which statements and writes are counted. */
const COUNTED_REQUESTS = 200;
/** The services' default pool size (DB_POOL_MAX), which the bare route's pool copies. */
const POOL_MAX = 10;

type Options = lib.BenchOptions<'rounds' | 'posts' | 'users' | 'follows' | 'pin'> & {
  only: ServiceName[];
  /** Only the routes whose label contains this text (e.g. `--route=/api/posts`, for a profile of one route). */
  route?: string;
};

const options = (): Options => {
  // --only and --route are this mode's non-numeric options: taken out before the common parser sees them.
  const take = (name: string) => {
    const arg = process.argv.find((a) => a.startsWith(`--${name}=`));
    if (arg) process.argv.splice(process.argv.indexOf(arg), 1);
    return arg?.slice(name.length + 3);
  };
  const onlyArg = take('only');
  const route = take('route');
  const only = (onlyArg ?? SERVICES.join(',')).split(',').filter(Boolean);
  for (const name of only)
    if (!SERVICES.includes(name as ServiceName))
      throw new Error(`--only takes ${SERVICES.join(', ')} (got ${JSON.stringify(name)})`);
  const opts = lib.benchOptions({
    command: 'npm run bench:compare',
    project: 'social-api, microblog-api and workspace-api',
    schemaPrefix: '<service>',
    own: {
      rounds: { help: 'interleaved bare/service rounds per route', env: 'BENCH_ROUNDS', fallback: 2 },
      posts: { help: 'microblog and social posts to seed', env: 'BENCH_POSTS', fallback: 10_000 },
      users: { help: 'workspace and social users to seed', env: 'BENCH_USERS', fallback: 1000 },
      follows: { help: 'users the social bench user follows', env: 'BENCH_FOLLOWS', fallback: 50 },
      pin: {
        help: '1: load generator on CPU 0, servers and PostgreSQL on the others; 0: all share every CPU',
        env: 'BENCH_PIN',
        fallback: 1,
        min: 0,
      },
    },
  });
  if (opts.databaseUrl)
    lib.log('note: DATABASE_URL is ignored: this mode reads the statement log of its own bench-only server');
  return { ...opts, only: only as ServiceName[], route };
};

// ---------------------------------------------------------------------------------------------
// The bench-only PostgreSQL server: pg_stat_statements preloaded, its log readable.

interface BenchServer {
  url: string;
  logFile: string;
  /** A superuser connection of the bench (its own statements are left out of every count). */
  admin: Client;
  adminPid: number;
  /** The bench's own sessions (its admin connection, the local server's membership connection). */
  ownPids: number[];
}

const BENCH_DATA_DIR = path.join(os.tmpdir(), 'platform-bench-compare-pg');

async function connect(url: string): Promise<{ client: Client; pid: number }> {
  const client = new Client({ connectionString: url });
  await client.connect();
  const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid');
  return { client, pid: rows[0].pid };
}

/**
 * Starts (or joins) the bench-only server in BENCH_DATA_DIR; the first time, it turns on
 * pg_stat_statements (a preloaded library: one restart) in that server's own configuration.
 */
async function benchServer(): Promise<BenchServer> {
  const port = await lib.freePort();
  const start = () => ensureLocalServer({ dataDir: BENCH_DATA_DIR, port });
  let server: LocalServer = await start();
  let { client } = await connect(server.url);
  const { rows } = await client.query<{ libs: string }>(
    `select current_setting('shared_preload_libraries') as libs`,
  );
  if (!rows[0].libs.includes('pg_stat_statements')) {
    lib.log('bench-only server: preloading pg_stat_statements (one restart)');
    await client.query(`alter system set shared_preload_libraries = 'pg_stat_statements'`);
    await client.end();
    await server.release();
    server = await start();
    client = (await connect(server.url)).client;
  }
  await client.query('create extension if not exists pg_stat_statements');
  await client.end();
  const admin = await connect(server.url);
  const own = await admin.client.query<{ pid: number }>(
    `select pid from pg_stat_activity where backend_type = 'client backend'`,
  );
  lib.onCleanup(async () => {
    await admin.client.end().catch(() => undefined);
    await server.release();
  });
  return {
    url: server.url,
    logFile: path.join(BENCH_DATA_DIR, 'pgdata', 'server.log'),
    admin: admin.client,
    adminPid: admin.pid,
    ownPids: own.rows.map((r) => r.pid),
  };
}

async function freshSchema(server: BenchServer, prefix: string): Promise<string> {
  const schema = `${prefix}_bench_${randomBytes(4).toString('hex')}`;
  await server.admin.query(`create schema "${schema}"`);
  lib.onCleanup(() => server.admin.query(`drop schema if exists "${schema}" cascade`));
  return schema;
}

// ---------------------------------------------------------------------------------------------
// Capturing what the service sends: PostgreSQL's own statement log around one request.

/** The parameters of a `DETAIL:  parameters: $1 = '...', $2 = NULL` line, in order. */
function parseParameters(detail: string): (string | null)[] {
  const values: (string | null)[] = [];
  for (const m of detail.matchAll(/\$(\d+) = (NULL|'((?:[^']|'')*)')/g))
    values[Number(m[1]) - 1] = m[2] === 'NULL' ? null : m[3].replace(/''/g, "'");
  return values;
}

/**
 * The statements other sessions sent while `act` ran, from the server's log (`log_statement = all`
 * for that moment only, set with ALTER SYSTEM and a reload so the service's open connections follow).
 * Stderr log lines: `<time> [<pid>] LOG:  execute <unnamed>: <sql>` or `... LOG:  statement: <sql>`,
 * continuation lines start with a tab, then `<time> [<pid>] DETAIL:  parameters: $1 = '...'`. Only
 * the entries logged while `act` ran count (the log's time, in milliseconds, UTC).
 */
async function captureOnce(server: BenchServer, act: () => Promise<unknown>): Promise<CapturedStatement[]> {
  const { admin } = server;
  const from = statSync(server.logFile).size;
  await admin.query(`alter system set log_statement = 'all'`);
  await admin.query('select pg_reload_conf()');
  await lib.sleep(300); // every backend has read the new configuration
  const started = Date.now();
  await act();
  const ended = Date.now();
  await admin.query('alter system reset log_statement');
  await admin.query('select pg_reload_conf()');
  await lib.sleep(300);
  const text = readFileSync(server.logFile).subarray(from).toString('utf8');
  const entries: { at: number; pid: number; kind: string; body: string }[] = [];
  for (const line of text.split('\n')) {
    const head = /^(\S+) (\S+) (\S+) \[(\d+)\] (\w+): {2}(.*)$/.exec(line);
    if (head) {
      const at = head[3] === 'UTC' ? Date.parse(`${head[1]}T${head[2]}Z`) : NaN;
      entries.push({ at, pid: Number(head[4]), kind: head[5], body: head[6] });
    } else if (line.startsWith('\t') && entries.length)
      entries[entries.length - 1].body += `\n${line.slice(1)}`;
  }
  const during = (at: number) => Number.isNaN(at) || (at >= started - 2 && at <= ended + 2);
  const statements: CapturedStatement[] = [];
  for (const [i, e] of entries.entries()) {
    if (e.pid === server.adminPid || e.kind !== 'LOG' || !during(e.at)) continue;
    const m = /^(?:execute [^:]*|statement): ([\s\S]*)$/.exec(e.body);
    if (!m) continue;
    const next = entries[i + 1];
    const detail = next && next.pid === e.pid && next.kind === 'DETAIL' ? next.body : '';
    statements.push({
      text: m[1],
      parameters: detail.startsWith('parameters:') ? parseParameters(detail) : [],
    });
  }
  return statements;
}

/**
 * The statements of one request of `act`: captured again until two captures in a row send the same
 * statements, so that background work falling in the window (a service's periodic flush) is not
 * taken for the route's. Returns the last capture and its answer.
 */
async function captureStatements<T>(
  server: BenchServer,
  act: () => Promise<T>,
): Promise<{ statements: CapturedStatement[]; answer: T }> {
  let previous: string | undefined;
  for (let attempt = 1; attempt <= 6; attempt += 1) {
    let answer: T | undefined;
    const statements = await captureOnce(server, async () => {
      answer = await act();
    });
    const texts = JSON.stringify(statements.map((s) => s.text));
    if (texts === previous && answer !== undefined) return { statements, answer };
    previous = texts;
  }
  throw new Error('the statements of the route differed in every capture');
}

// ---------------------------------------------------------------------------------------------
// Counting from PostgreSQL's statistics.

/**
 * Ends every connection of the service's (and the bare route's) pools: each reports its statistics
 * as it exits. The bench's own sessions stay.
 */
async function flushStatistics(server: BenchServer): Promise<void> {
  const { rows } = await server.admin.query<{ pid: number }>(
    `select pid from pg_stat_activity where backend_type = 'client backend' and pid <> all($1::int[])
       and datname = current_database()`,
    [server.ownPids],
  );
  const pids = rows.map((r) => r.pid);
  await server.admin.query('select pg_terminate_backend(pid) from unnest($1::int[]) as pid', [pids]);
  for (let i = 0; i < 200; i += 1) {
    const left = await server.admin.query('select 1 from pg_stat_activity where pid = any($1::int[])', [
      pids,
    ]);
    if (!left.rows.length) return;
    await lib.sleep(25);
  }
  throw new Error('backends did not exit');
}

async function rowsWritten(server: BenchServer, schema: string): Promise<number> {
  const { rows } = await server.admin.query<{ n: string }>(
    `select coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) as n from pg_stat_user_tables where schemaname = $1`,
    [schema],
  );
  return Number(rows[0].n);
}

export interface Counted {
  statementsPerRequest: number;
  rowsWrittenPerRequest: number;
  /** pg_stat_statements query ids with their calls (to compare the service's with the bare route's). */
  calls: Record<string, number>;
}

/** Statements (pg_stat_statements calls) and rows written over COUNTED_REQUESTS requests of `target`. */
async function countStatements(server: BenchServer, schema: string, target: Target): Promise<Counted> {
  await flushStatistics(server);
  const writtenBefore = await rowsWritten(server, schema);
  await server.admin.query('select pg_stat_statements_reset()');
  const result = await autocannon({
    url: target.url,
    method: target.method,
    headers: target.headers,
    body: target.body,
    connections: 10,
    amount: COUNTED_REQUESTS,
  });
  if (result['2xx'] !== COUNTED_REQUESTS)
    throw new Error(`${target.url}: ${result['2xx']} of ${COUNTED_REQUESTS} answered 2xx`);
  const { rows } = await server.admin.query<{ queryid: string; calls: string }>(
    `select queryid::text, calls from pg_stat_statements
      where dbid = (select oid from pg_database where datname = current_database())
        and query not ilike '%pg_stat_statements%' and query not ilike '%pg_stat_activity%'
        and query not ilike '%pg_terminate_backend%' and query not ilike '%pg_stat_user_tables%'`,
  );
  await flushStatistics(server);
  const written = (await rowsWritten(server, schema)) - writtenBefore;
  const calls = Object.fromEntries(rows.map((r) => [r.queryid, Number(r.calls)]));
  const total = Object.values(calls).reduce((a, b) => a + b, 0);
  return {
    statementsPerRequest: total / COUNTED_REQUESTS,
    rowsWrittenPerRequest: written / COUNTED_REQUESTS,
    calls,
  };
}

// ---------------------------------------------------------------------------------------------
// Routes.

/** One request of a route. */
interface Target {
  url: string;
  method: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
}

/** A hot read route of a service, as the bench drives it (path and request, on the service's base). */
interface Route {
  service: ServiceName;
  label: string;
  method: 'GET' | 'POST';
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

interface ServiceUnderTest {
  name: ServiceName;
  schema: string;
  service: lib.Service;
  routes: Route[];
}

/**
 * Where the built services are: `apps/<service>-api/dist`, or under BENCH_APPS_DIR (a directory
 * holding `<service>-api/dist`, e.g. an older build to measure before/after in the same way).
 */
const APPS_DIR = process.env.BENCH_APPS_DIR
  ? path.resolve(process.env.BENCH_APPS_DIR)
  : path.join(lib.ROOT, 'apps');
const APP = (name: string) => path.join(APPS_DIR, `${name}-api/dist`);

/** With --cpu-prof: the file name of a process's V8 CPU profile in results/ (written when it stops). */
const profileName = (opts: Options, name: string) =>
  opts.cpuProf ? `${lib.stamp(new Date())}-compare-${name}.cpuprofile` : undefined;

async function startMicroblog(server: BenchServer, opts: Options): Promise<ServiceUnderTest> {
  const schema = await freshSchema(server, 'microblog');
  const database = await openDatabase<MicroblogDatabase>({ url: server.url, schema, poolMax: 2 });
  try {
    await migrateToLatest(database.db, schema, microblogMigrations);
    await seedDemoData(database.db, opts.posts);
  } finally {
    await database.close();
  }
  await server.admin.query(`analyze`);
  const service = await lib.startService(
    'microblog-api',
    path.join(APP('microblog'), 'main.js'),
    { ...process.env, DATABASE_URL: server.url, DB_SCHEMA: schema, WRITE_RATE_LIMIT: '1000000000' },
    profileName(opts, 'microblog-api'),
  );
  return {
    name: 'microblog',
    schema,
    service,
    routes: [
      {
        service: 'microblog',
        label: 'microblog GET /api/microblog (default page)',
        method: 'GET',
        path: '/api/microblog',
      },
    ],
  };
}

async function startWorkspace(server: BenchServer, opts: Options): Promise<ServiceUnderTest> {
  const schema = await freshSchema(server, 'workspace');
  const key = { apiKey: `bench${randomBytes(6).toString('hex')}`, secret: randomBytes(16).toString('hex') };
  const service = await lib.startService(
    'workspace-api',
    path.join(APP('workspace'), 'main.js'),
    {
      ...process.env,
      DATABASE_URL: server.url,
      DB_SCHEMA: schema,
      BOOTSTRAP_API_KEY: key.apiKey,
      BOOTSTRAP_API_KEY_SECRET: key.secret,
    },
    profileName(opts, 'workspace-api'),
  );
  // Users straight into its tables (the service migrated them on start), each in "All Users".
  await server.admin.query(`set search_path = "${schema}"`);
  await server.admin.query(
    `with u as (insert into users (username) select 'bench' || g from generate_series(1, $1::int) g returning id)
     insert into user_groups (user_id, group_id) select u.id, g.id from u cross join groups g where g.name = 'All Users'`,
    [opts.users],
  );
  await server.admin.query('reset search_path');
  await server.admin.query('analyze');
  return {
    name: 'workspace',
    schema,
    service,
    routes: [
      {
        service: 'workspace',
        label: 'workspace POST /api/public/get_users (page 1 of 100)',
        method: 'POST',
        path: '/api/public/get_users',
        headers: { 'content-type': 'application/json', 'api-key': key.apiKey, 'api-key-secret': key.secret },
        body: JSON.stringify({ page: 1, page_size: 100 }),
      },
    ],
  };
}

async function startSocial(server: BenchServer, opts: Options): Promise<ServiceUnderTest> {
  const schema = await freshSchema(server, 'social');
  const env = { ...process.env, DATABASE_URL: server.url, DB_SCHEMA: schema, LOG_LEVEL: 'warn' };
  await fake('users', opts.users, env);
  await fake('posts', opts.posts, env);
  const { rows } = await server.admin.query<{ id: number }>(`select id from "${schema}".users order by id`);
  const step = rows.length / Math.min(opts.follows, rows.length);
  const targets = Array.from(
    { length: Math.min(opts.follows, rows.length) },
    (_, i) => rows[Math.floor(i * step)].id,
  );
  const service = await lib.startService(
    'social-api',
    path.join(APP('social'), 'main.js'),
    { ...env, ACCESS_TOKEN_MINUTES: '600', SECRET_KEY: randomBytes(24).toString('hex'), DISABLE_AUTH: 'no' },
    profileName(opts, 'social-api'),
  );
  const me = await benchUser(service.base, targets);
  await server.admin.query('analyze');
  const read = (label: string, route: string): Route => ({
    service: 'social',
    label: `social GET ${label}`,
    method: 'GET',
    path: route,
    headers: me.auth,
  });
  return {
    name: 'social',
    schema,
    service,
    routes: [
      read('/api/posts', '/api/posts'),
      read(`/api/feed (following ${targets.length})`, '/api/feed'),
      read('/api/users/<id>', `/api/users/${me.id}`),
      read('/api/me', '/api/me'),
    ],
  };
}

const STARTERS: Record<ServiceName, (server: BenchServer, opts: Options) => Promise<ServiceUnderTest>> = {
  social: startSocial,
  microblog: startMicroblog,
  workspace: startWorkspace,
};

/** Starts bare.ts for `route` with the captured statements and the service's answer; checks the bytes. */
async function startBare(
  server: BenchServer,
  sut: ServiceUnderTest,
  route: Route,
  statements: CapturedStatement[],
  sample: lib.Answer<unknown>,
  opts: Options,
): Promise<lib.NodeProcess & { url: string }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-bare-'));
  lib.onCleanup(() => rmSync(dir, { recursive: true, force: true }));
  const text = sample.bytes.toString('utf8');
  if (JSON.stringify(sample.json) !== text)
    throw new Error(`${route.label}: JSON.stringify does not give back the service's bytes`);
  const headers: Record<string, string> = {};
  for (const name of ['content-type', 'link']) {
    const value = sample.response.headers.get(name);
    if (value !== null) headers[name] = value;
  }
  const payload: BarePayload = {
    method: route.method,
    route: route.path,
    databaseUrl: server.url,
    schema: sut.schema,
    poolMax: POOL_MAX,
    statements,
    body: sample.json,
    headers,
  };
  const payloadFile = path.join(dir, 'payload.json');
  writeFileSync(payloadFile, JSON.stringify(payload));
  const port = await lib.freePort();
  const profile = profileName(opts, `bare-${sut.name}`);
  const proc = lib.startNode(
    'bare',
    [
      ...(profile ? ['--cpu-prof', `--cpu-prof-dir=${lib.RESULTS_DIR}`, `--cpu-prof-name=${profile}`] : []),
      lib.compileEntry(dir, path.join(__dirname, 'bare.ts')),
      payloadFile,
    ],
    {
      ...process.env,
      PORT: String(port),
      // The compiled file lives in a temporary directory: it finds Fastify and pg where the bench does.
      NODE_PATH: [
        path.resolve(require.resolve('fastify/package.json'), '../..'),
        path.resolve(require.resolve('pg/package.json'), '../..'),
      ].join(path.delimiter),
    },
  );
  const url = `http://127.0.0.1:${port}${route.path}`;
  const init = { method: route.method, headers: route.headers, body: route.body };
  let check: lib.Answer<unknown> | undefined;
  for (let i = 0; !check; i += 1) {
    check = await lib.request(url, init).catch((error: unknown) => {
      if (i === 100) throw new Error(`the bare route did not answer: ${String(error)}\n${proc.output()}`);
      return undefined;
    });
    if (!check) await lib.sleep(100);
  }
  if (!check.bytes.equals(sample.bytes)) throw new Error(`${route.label}: the bare route's body differs`);
  return { ...proc, url };
}

interface RouteResult {
  label: string;
  bytes: number;
  statements: CapturedStatement[];
  service: Counted;
  bare: Counted;
  sameStatements: boolean;
  /** Statements per request the service sent besides the bare route's (background work). */
  otherPerRequest: number;
  rounds: { bare: lib.ScenarioResult; service: lib.ScenarioResult; ratio: number | null }[];
  ratio: number | null;
  /** The CPUs the servers and PostgreSQL ran on (the load generator on CPU 0), or null: not pinned. */
  pinned: string | null;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((x, y) => x - y);
  const middle = sorted.length / 2;
  return sorted.length % 2 ? sorted[Math.floor(middle)] : (sorted[middle - 1] + sorted[middle]) / 2;
};

async function compareRoute(
  server: BenchServer,
  sut: ServiceUnderTest,
  route: Route,
  opts: Options,
): Promise<RouteResult> {
  const url = `${sut.service.base}${route.path}`;
  const init = { method: route.method, headers: route.headers, body: route.body };
  const target: Target = { url, method: route.method, headers: route.headers, body: route.body };
  await lib.request(url, init); // warm: prepared caches, the pool's first connection
  const { statements, answer: sample } = await captureStatements(server, () => lib.request(url, init));
  if (!statements.length) throw new Error(`${route.label}: no statement captured`);
  lib.log(`${route.label}: ${statements.length} statements captured, ${sample.bytes.length} bytes`);
  const bare = await startBare(server, sut, route, statements, sample, opts);
  const serviceCounted = await countStatements(server, sut.schema, target);
  const bareCounted = await countStatements(server, sut.schema, { ...target, url: bare.url });
  // The bare route's statements, each as many times as the service sent it. The service may send
  // more (work not tied to one request, such as a periodic batched flush): shown apart, per request.
  const sameStatements = Object.entries(bareCounted.calls).every(
    ([id, calls]) => serviceCounted.calls[id] === calls,
  );
  const otherPerRequest = serviceCounted.statementsPerRequest - bareCounted.statementsPerRequest;

  const scenario = (name: string, label: string, base: Target, pid: number): lib.Scenario => ({
    name,
    label,
    ...base,
    pid,
    bytes: sample.bytes.length,
    items: 1,
  });
  // Seeding's dirty pages written now, not by a checkpoint during a measured round.
  await server.admin.query('checkpoint');
  const pinned = opts.pin ? pinServers(sut, bare) : null;
  const rounds: RouteResult['rounds'] = [];
  for (let round = 1; round <= opts.rounds; round += 1) {
    const [b, s] = await lib.runScenarios(
      [
        scenario('bare', `bare same-SQL route (round ${round})`, { ...target, url: bare.url }, bare.pid),
        scenario('service', `${route.label} (round ${round})`, target, sut.service.pid),
      ],
      opts,
    );
    rounds.push({ bare: b, service: s, ratio: s.ratioToBaseline });
  }
  bare.child.kill('SIGTERM');
  await bare.exited;
  if (pinned) lib.unpinProcesses(benchServerPids());
  return {
    label: route.label,
    bytes: sample.bytes.length,
    statements,
    service: serviceCounted,
    bare: bareCounted,
    sameStatements,
    otherPerRequest,
    rounds,
    ratio: lib.round(median(rounds.map((r) => r.ratio ?? NaN)), 3),
    pinned,
  };
}

/**
 * With `--pin=1`: the load generator (this process) on CPU 0; the service, the bare route and the
 * bench-only PostgreSQL server (its postmaster and every backend, present and future) on the others.
 */
function pinServers(sut: ServiceUnderTest, bare: lib.NodeProcess): string | null {
  return lib.pinProcesses([...benchServerPids(), sut.service.pid, bare.pid]);
}

/** The bench-only PostgreSQL server's postmaster and its children (backends, background workers). */
function benchServerPids(): number[] {
  const pidFile = path.join(BENCH_DATA_DIR, 'pgdata', 'postmaster.pid');
  const postmaster = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  return [postmaster, ...lib.childrenOf(postmaster)];
}

// ---------------------------------------------------------------------------------------------
// The login storm (reads' latency while logins hash) is its own script, src/login-storm.ts; a
// scenario that needs the same-SQL bare route can take a started service (ServiceUnderTest) and
// `compareRoute` of this file.

async function bench(opts: Options): Promise<void> {
  const startedAt = new Date();
  const loadAtStart = lib.loadAverage();
  for (const name of process.env.BENCH_APPS_DIR ? [] : opts.only)
    lib.ensureBuild({
      project: `${name}-api`,
      required: ['app.js', 'main.js']
        .map((f) => path.join(APP(name), f))
        .concat(path.join(lib.ROOT, 'libs/db/dist/index.js')),
      sources: [`apps/${name}-api`, 'libs/db', 'libs/http-kit', 'libs/schema'],
      force: opts.build,
    });
  const server = await benchServer();
  lib.log(`bench-only PostgreSQL in ${BENCH_DATA_DIR} (pg_stat_statements on)`);

  const results: RouteResult[] = [];
  for (const name of opts.only) {
    const sut = await STARTERS[name](server, opts);
    for (const route of sut.routes)
      if (!opts.route || route.label.includes(opts.route))
        results.push(await compareRoute(server, sut, route, opts));
    sut.service.child.kill('SIGTERM');
    await sut.service.exited;
  }

  const file = path.join(lib.RESULTS_DIR, `${lib.stamp(startedAt)}-compare.json`);
  writeFileSync(
    file,
    JSON.stringify(
      {
        startedAt: startedAt.toISOString(),
        finishedAt: new Date().toISOString(),
        loadAtStart,
        loadAtEnd: lib.loadAverage(),
        options: opts,
        routes: results,
      },
      null,
      2,
    ) + '\n',
  );

  console.log('');
  console.log(
    `side by side — service vs a bare Fastify+pg route running the same SQL, ${opts.connections} connections, ${opts.rounds} interleaved rounds of ${opts.duration}s after ${opts.warmup}s warm-up`,
  );
  const pinned = [...new Set(results.map((r) => r.pinned))];
  console.log(
    pinned.length === 1 && pinned[0] !== null
      ? `pinned: load generator on CPU 0, servers and PostgreSQL on CPU ${pinned[0]}`
      : 'not pinned: load generator, servers and PostgreSQL share every CPU',
  );
  console.log(
    `load average (1/5/15 min) at start ${loadAtStart.join(' ')}, at end ${lib.loadAverage().join(' ')}`,
  );
  console.log('');
  const header = [
    'route',
    'service req/s',
    'bare req/s',
    'ratio',
    'p99 ms svc/bare',
    'CPU ms/req svc/bare',
    'stmts/req svc',
    'stmts/req bare',
    'same SQL',
    'rows written/req',
    'body KiB',
  ];
  const rows = results.map((r) => [
    r.label,
    r.rounds.map((x) => x.service.reqPerSec.toFixed(0)).join(' '),
    r.rounds.map((x) => x.bare.reqPerSec.toFixed(0)).join(' '),
    `${r.rounds.map((x) => (x.ratio ?? NaN).toFixed(2)).join(' ')} (median ${r.ratio?.toFixed(2) ?? 'n/a'})`,
    r.rounds.map((x) => `${x.service.latencyMs.p99}/${x.bare.latencyMs.p99}`).join(' '),
    r.rounds
      .map(
        (x) => `${x.service.serverCpuMsPerRequest?.toFixed(2)}/${x.bare.serverCpuMsPerRequest?.toFixed(2)}`,
      )
      .join(' '),
    r.service.statementsPerRequest.toFixed(2),
    r.bare.statementsPerRequest.toFixed(2),
    (r.sameStatements ? 'yes' : 'NO') +
      (r.otherPerRequest > 0 ? ` (+${r.otherPerRequest.toFixed(2)} other)` : ''),
    r.service.rowsWrittenPerRequest.toFixed(2),
    (r.bytes / 1024).toFixed(1),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of rows) console.log(line(row));
  console.log('');
  for (const r of results) {
    console.log(`${r.label}: the statements it sends (captured, replayed by the bare route):`);
    for (const s of r.statements) console.log(`  ${s.text.replace(/\s+/g, ' ').trim().slice(0, 160)}`);
  }
  const busy = results
    .flatMap((r) => r.rounds.flatMap((x) => [x.bare, x.service]))
    .filter((x) => (x.otherCpuPercentOfOneCore ?? 0) > 15);
  if (busy.length)
    console.log(
      `WARNING: other processes used more than 15 % of a core during ${busy.length} runs; absolute figures are skewed, ratios less so`,
    );
  console.log(`full figures: ${path.relative(lib.ROOT, file)}`);
}

void lib.runMain(options, bench);
