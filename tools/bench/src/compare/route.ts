// One route side by side: its statements captured, bare.ts started to replay them, both counted
// from PostgreSQL's statistics, then measured in interleaved rounds (bare, service, bare, ...).
import type { BarePayload, CapturedStatement } from '../bare';
import { headersOf, startBareServer } from '../lib/baselines';
import { runScenarios, type Scenario, type ScenarioResult, type Target } from '../lib/load';
import { pinProcesses, unpinProcesses } from '../lib/machine';
import { median, round } from '../lib/numbers';
import { request, stopNode, type Answer, type NodeProcess } from '../lib/processes';
import { log } from '../lib/run';
import type { CompareOptions } from './options';
import { benchServerPids, type BenchServer } from './server';
import { profileName, type Route, type ServiceUnderTest } from './services';
import { captureStatements, countStatements, type Counted } from './statements';

/** The services' default pool size (DB_POOL_MAX), which the bare route's pool copies. */
const POOL_MAX = 10;

export interface RouteResult {
  label: string;
  bytes: number;
  statements: CapturedStatement[];
  service: Counted;
  bare: Counted;
  sameStatements: boolean;
  /** Statements per request the service sent besides the bare route's (background work). */
  otherPerRequest: number;
  rounds: { bare: ScenarioResult; service: ScenarioResult; ratio: number | null }[];
  ratio: number | null;
  /** The CPUs the servers and PostgreSQL ran on (the load generator on CPU 0), or null: not pinned. */
  pinned: string | null;
}

/**
 * Starts bare.ts for `route` with the captured statements (named where the service's were) and the
 * service's answer; checks the bytes.
 */
function startBare(
  server: BenchServer,
  sut: ServiceUnderTest,
  route: Route,
  statements: CapturedStatement[],
  sample: Answer<unknown>,
  opts: CompareOptions,
): Promise<NodeProcess & { url: string }> {
  if (JSON.stringify(sample.json) !== sample.bytes.toString('utf8'))
    throw new Error(`${route.label}: JSON.stringify does not give back the service's bytes`);
  const payload: BarePayload = {
    method: route.method,
    route: route.path,
    databaseUrl: server.url,
    schema: sut.schema,
    poolMax: POOL_MAX,
    statements,
    body: sample.json,
    headers: headersOf(sample, ['content-type', 'link']),
  };
  return startBareServer({
    name: 'bare',
    payload,
    packages: ['fastify', 'pg'],
    route: route.path,
    init: { method: route.method, headers: route.headers, body: route.body },
    sample,
    differs: `${route.label}: the bare route's body differs`,
    cpuProfile: profileName(opts, `bare-${sut.name}`),
  });
}

export async function compareRoute(
  server: BenchServer,
  sut: ServiceUnderTest,
  route: Route,
  opts: CompareOptions,
): Promise<RouteResult> {
  const url = `${sut.service.base}${route.path}`;
  const init = { method: route.method, headers: route.headers, body: route.body };
  const target: Target = { url, ...init };
  await request(url, init); // warm: prepared caches, the pool's first connection
  const { statements, answer: sample } = await captureStatements(server, () => request(url, init));
  if (!statements.length) throw new Error(`${route.label}: no statement captured`);
  const named = statements.filter((s) => s.named).length;
  log(
    `${route.label}: ${statements.length} statements captured (${named} named), ${sample.bytes.length} bytes`,
  );
  const bare = await startBare(server, sut, route, statements, sample, opts);
  const serviceCounted = await countStatements(server, sut.schema, target);
  const bareCounted = await countStatements(server, sut.schema, { ...target, url: bare.url });
  // The bare route's statements, each as many times as the service sent it. The service may send
  // more (work not tied to one request, such as a periodic batched flush): shown apart, per request.
  const sameStatements = Object.entries(bareCounted.calls).every(
    ([id, calls]) => serviceCounted.calls[id] === calls,
  );

  const scenario = (name: string, label: string, base: Target, pid: number): Scenario => ({
    name,
    label,
    ...base,
    pid,
    bytes: sample.bytes.length,
    items: 1,
  });
  // Seeding's dirty pages written now, not by a checkpoint during a measured round.
  await server.admin.query('checkpoint');
  // The load generator (this process) on CPU 0; the service, the bare route and the bench-only
  // PostgreSQL server (its postmaster and every backend, present and future) on the others.
  const pinned = opts.pin ? pinProcesses([...benchServerPids(), sut.service.pid, bare.pid]) : null;
  const rounds: RouteResult['rounds'] = [];
  for (let n = 1; n <= opts.rounds; n += 1) {
    const [b, s] = await runScenarios(
      [
        scenario('bare', `bare same-SQL route (round ${n})`, { ...target, url: bare.url }, bare.pid),
        scenario('service', `${route.label} (round ${n})`, target, sut.service.pid),
      ],
      // The bench-only server's processes: its postmaster and every backend and worker.
      { ...opts, postgresPids: async () => benchServerPids() },
    );
    rounds.push({ bare: b, service: s, ratio: s.ratioToBaseline });
  }
  await stopNode(bare);
  if (pinned) unpinProcesses(benchServerPids());
  return {
    label: route.label,
    bytes: sample.bytes.length,
    statements,
    service: serviceCounted,
    bare: bareCounted,
    sameStatements,
    otherPerRequest: serviceCounted.statementsPerRequest - bareCounted.statementsPerRequest,
    rounds,
    ratio: round(median(rounds.map((r) => r.ratio ?? NaN)), 3),
    pinned,
  };
}
