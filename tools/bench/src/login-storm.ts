// Hand-run benchmark of social-api under a password-guessing storm: `npm run bench:login-storm`.
// For each configuration (the old defaults: argon2id 64 MiB/3 passes/4 lanes, unbounded, no limits;
// today's: OWASP's 19 MiB/2/1, bounded hashing, login limits) it starts the built service on a fresh
// schema and measures, one after another in the same run:
//   - login throughput: `connections` clients logging in with the right password (req/s);
//   - quiet: a real user's login latency (sequential logins) and read latency (GET /api/posts/<id>
//     and GET /api/me from 4 clients), nothing else running;
//   - storm (one address): the same, while 32 clients from another loopback address send wrong
//     passwords for a victim account as fast as they are answered;
//   - storm (32 addresses): the same with every storm client on its own loopback address.
// Every figure is reported next to the quiet one of the same configuration (ratios). Not a test.
import { Agent, request as httpRequest } from 'node:http';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureServiceBuild } from './lib/build';
import { databaseEnv, throwAwayDatabase } from './lib/database';
import { loadAverage } from './lib/machine';
import { percentile, round } from './lib/numbers';
import { benchOptions, type BenchOptions } from './lib/options';
import { request, startService, stopNode } from './lib/processes';
import { writeReport } from './lib/report';
import { log, runMain, stamp } from './lib/run';
import { APP_DIST, SOCIAL_API } from './social-setup';

type Options = BenchOptions<'storm' | 'logins'>;

const options = (): Options =>
  benchOptions({
    command: 'npm run bench:login-storm',
    ...SOCIAL_API,
    own: {
      storm: { help: 'concurrent wrong-password clients', env: 'BENCH_STORM', fallback: 32 },
      logins: { help: "the real user's sequential logins per phase", env: 'BENCH_LOGINS', fallback: 20 },
    },
  });

/** The configurations compared, as environment variables of the service. */
const CONFIGURATIONS: Record<string, NodeJS.ProcessEnv> = {
  'before (64 MiB/t3/p4, unbounded, no limits)': {
    ARGON2_MEMORY_KIB: '65536',
    ARGON2_TIME_COST: '3',
    ARGON2_PARALLELISM: '4',
    ARGON2_CONCURRENCY: '64',
    ARGON2_QUEUE: '100000',
    LOGIN_FAILURES_PER_ADDRESS: '1000000',
    LOGIN_FAILURES_PER_ACCOUNT: '1000000',
  },
  'today (OWASP 19 MiB/t2/p1, bounded, limits)': {},
};

interface Hit {
  status: number;
  ms: number;
}

/** One HTTP/1.1 keep-alive client, optionally bound to a local address (127.x.y.z on loopback). */
function client(base: string, localAddress?: string) {
  const url = new URL(base);
  const agent = new Agent({ keepAlive: true, maxSockets: 1, localAddress });
  return {
    send(
      method: string,
      pathname: string,
      headers: Record<string, string> = {},
      body?: string,
    ): Promise<Hit> {
      const started = performance.now();
      return new Promise((resolve, reject) => {
        const req = httpRequest(
          { host: url.hostname, port: url.port, method, path: pathname, agent, headers },
          (res) => {
            res.resume();
            res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started }));
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    },
    close: () => agent.destroy(),
  };
}

const basic = (name: string, password: string) =>
  `Basic ${Buffer.from(`${name}:${password}`).toString('base64')}`;

interface Latency {
  n: number;
  p50: number | null;
  p99: number | null;
  statuses: Record<string, number>;
}

function latency(hits: Hit[]): Latency {
  const statuses: Record<string, number> = {};
  for (const h of hits) statuses[h.status] = (statuses[h.status] ?? 0) + 1;
  const ms = hits.map((h) => h.ms);
  return {
    n: hits.length,
    p50: round(percentile(ms, 50) ?? NaN, 1),
    p99: round(percentile(ms, 99) ?? NaN, 1),
    statuses,
  };
}

/** Runs `loop` on each client until `stop()` is true; every answer is kept. */
async function loopUntil(
  clients: ReturnType<typeof client>[],
  stop: () => boolean,
  once: (c: ReturnType<typeof client>) => Promise<Hit>,
) {
  const hits: Hit[] = [];
  await Promise.all(
    clients.map(async (c) => {
      while (!stop()) hits.push(await once(c));
    }),
  );
  return hits;
}

interface Phase {
  login: Latency;
  read: Latency;
  storm?: Latency & { perSecond: number };
}

async function measureConfiguration(name: string, extraEnv: NodeJS.ProcessEnv, opts: Options) {
  const db = await throwAwayDatabase(SOCIAL_API.schemaPrefix, opts.databaseUrl);
  const service = await startService(
    `social-api ${name}`,
    path.join(APP_DIST, 'main.js'),
    databaseEnv(db.config, { SECRET_KEY: randomBytes(24).toString('hex'), ...extraEnv }),
    undefined,
  );
  const user = { username: 'realuser', password: 'real-password-1' };
  const victim = { username: 'victim', password: 'victim-password-1' };
  const setup = client(service.base);
  for (const u of [user, victim]) {
    const body = JSON.stringify({ ...u, email: `${u.username}@example.com` });
    const r = await setup.send('POST', '/api/users', { 'content-type': 'application/json' }, body);
    if (r.status !== 201) throw new Error(`registering ${u.username}: ${r.status}`);
  }
  const tokenAnswer = await request<{ access_token: string }>(`${service.base}/api/tokens`, {
    method: 'POST',
    headers: { authorization: basic(user.username, user.password) },
  });
  const token = tokenAnswer.json.access_token;
  const post = await request<{ id: number }>(
    `${service.base}/api/posts`,
    {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'hello' }),
    },
    201,
  );
  setup.close();

  // The real user: its own address (127.0.0.1), sequential logins; readers: 4 clients.
  const realUser = client(service.base, '127.0.0.1');
  const readers = Array.from({ length: 4 }, () => client(service.base, '127.0.0.1'));
  const readOnce = (() => {
    let i = 0;
    return (c: ReturnType<typeof client>) =>
      c.send('GET', i++ % 2 ? `/api/posts/${post.json.id}` : '/api/me', { authorization: `Bearer ${token}` });
  })();

  const phase = async (stormClients: ReturnType<typeof client>[]): Promise<Phase> => {
    let done = false;
    const started = performance.now();
    const stormHits = loopUntil(
      stormClients,
      () => done,
      (c) =>
        c.send('POST', '/api/tokens', {
          authorization: basic(victim.username, `guess-${randomBytes(4).toString('hex')}`),
        }),
    );
    const readHits = loopUntil(readers, () => done, readOnce);
    await sleep(opts.warmup * 1000);
    const logins: Hit[] = [];
    const deadline = performance.now() + opts.duration * 1000;
    while (logins.length < opts.logins || performance.now() < deadline) {
      logins.push(
        await realUser.send('POST', '/api/tokens', { authorization: basic(user.username, user.password) }),
      );
    }
    done = true;
    const [storm, reads] = await Promise.all([stormHits, readHits]);
    const seconds = (performance.now() - started) / 1000;
    return {
      login: latency(logins),
      read: latency(reads),
      storm: stormClients.length
        ? { ...latency(storm), perSecond: round(storm.length / seconds, 1) ?? 0 }
        : undefined,
    };
  };

  // Login throughput with the right password (`connections` clients, each on its own address so
  // that no limit applies).
  const loginClients = Array.from({ length: Math.min(opts.connections, 50) }, (_, i) =>
    client(service.base, `127.0.2.${i + 1}`),
  );
  let stop = false;
  const throughputStart = performance.now();
  const timer = setTimeout(() => (stop = true), opts.duration * 1000);
  const loginHits = await loopUntil(
    loginClients,
    () => stop,
    (c) => c.send('POST', '/api/tokens', { authorization: basic(user.username, user.password) }),
  );
  clearTimeout(timer);
  const loginThroughput = {
    perSecond: round(
      loginHits.filter((h) => h.status === 200).length / ((performance.now() - throughputStart) / 1000),
      1,
    ),
    ...latency(loginHits),
  };
  loginClients.forEach((c) => c.close());

  const quiet = await phase([]);
  const oneAddress = await phase(Array.from({ length: opts.storm }, () => client(service.base, '127.0.0.2')));
  const manyAddresses = await phase(
    Array.from({ length: opts.storm }, (_, i) => client(service.base, `127.0.1.${i + 1}`)),
  );
  realUser.close();
  readers.forEach((c) => c.close());
  await stopNode(service);
  const ratio = (a: number | null, b: number | null) => (a !== null && b ? round(a / b, 2) : null);
  return {
    loginThroughput,
    quiet,
    stormOneAddress: oneAddress,
    stormManyAddresses: manyAddresses,
    ratios: {
      loginP50OneAddress: ratio(oneAddress.login.p50, quiet.login.p50),
      loginP99OneAddress: ratio(oneAddress.login.p99, quiet.login.p99),
      readP99OneAddress: ratio(oneAddress.read.p99, quiet.read.p99),
      loginP50ManyAddresses: ratio(manyAddresses.login.p50, quiet.login.p50),
      loginP99ManyAddresses: ratio(manyAddresses.login.p99, quiet.login.p99),
      readP99ManyAddresses: ratio(manyAddresses.read.p99, quiet.read.p99),
    },
  };
}

async function main(opts: Options) {
  ensureServiceBuild({ project: SOCIAL_API.project, files: ['main.js'], force: opts.build });
  const results: Record<string, Awaited<ReturnType<typeof measureConfiguration>>> = {};
  for (const [name, env] of Object.entries(CONFIGURATIONS)) {
    log(`measuring ${name} ...`);
    results[name] = await measureConfiguration(name, env, opts);
  }
  const [before, today] = Object.values(results);
  const report = {
    bench: 'login-storm',
    at: new Date().toISOString(),
    loadAverage: loadAverage(),
    options: opts,
    results,
    loginThroughputTodayToBefore:
      before.loginThroughput.perSecond && today.loginThroughput.perSecond
        ? round(today.loginThroughput.perSecond / before.loginThroughput.perSecond, 2)
        : null,
  };
  const file = writeReport(`login-storm-${stamp(new Date())}`, report);
  for (const [name, r] of Object.entries(results)) {
    console.log(`\n${name}`);
    console.log(
      `  login throughput (right password, ${Math.min(opts.connections, 50)} clients): ${r.loginThroughput.perSecond} req/s, p50 ${r.loginThroughput.p50} ms, p99 ${r.loginThroughput.p99} ms`,
    );
    for (const [label, p] of [
      ['quiet', r.quiet],
      [`storm, ${opts.storm} clients from one address`, r.stormOneAddress],
      [`storm, ${opts.storm} clients from ${opts.storm} addresses`, r.stormManyAddresses],
    ] as const) {
      const storm = p.storm ? `; storm ${p.storm.perSecond}/s ${JSON.stringify(p.storm.statuses)}` : '';
      console.log(
        `  ${label}: real login p50 ${p.login.p50} / p99 ${p.login.p99} ms ${JSON.stringify(p.login.statuses)}; reads p50 ${p.read.p50} / p99 ${p.read.p99} ms (${p.read.n})${storm}`,
      );
    }
    console.log(`  ratios to quiet: ${JSON.stringify(r.ratios)}`);
  }
  console.log(`\nlogin throughput today/before: ${report.loginThroughputTodayToBefore}×`);
  console.log(`report: ${file}`);
}

void runMain(options, main);
