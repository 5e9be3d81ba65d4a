// The load: autocannon (in this process) drives each scenario after an unmeasured warm-up, and each
// measured run becomes one record of the report, with the CPU and memory readings around it.
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import { cpuSeconds, cpuSince, machineBusySeconds, memory, postgresCpu, type Memory } from './machine';
import { round } from './numbers';
import { log } from './run';

/** One request, as autocannon sends it over and over. */
export interface Target {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
}

/** A request driven against one server process. */
export interface Scenario extends Target {
  name: string;
  label: string;
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

/**
 * Drives `target` with `connections` keep-alive connections (no pipelining) for `duration` seconds
 * or `amount` requests; a request unanswered after 10 s counts as a timeout.
 */
export function drive(
  target: Target,
  connections: number,
  length: { duration: number } | { amount: number },
): Promise<autocannon.Result> {
  return autocannon({
    url: target.url,
    method: target.method ?? 'GET',
    headers: target.headers,
    body: target.body,
    connections,
    ...length,
    timeout: 10,
  });
}

/**
 * CPU seconds so far: of the server, of this process (the load generator), of the machine, of
 * PostgreSQL (the processes `postgresPids`, or every local one).
 */
function cpuReadings(pid: number, postgresPids: number[] | undefined) {
  const own = process.cpuUsage();
  return {
    server: cpuSeconds(pid),
    own: (own.user + own.system) / 1e6,
    machine: machineBusySeconds(),
    postgres: postgresCpu(postgresPids),
  };
}

/** The CPU used between two readings, as milliseconds per request and percentages of one core. */
function cpuFigures(
  before: ReturnType<typeof cpuReadings>,
  after: ReturnType<typeof cpuReadings>,
  result: autocannon.Result,
) {
  const server = before.server === null || after.server === null ? null : after.server - before.server;
  const busy = before.machine === null || after.machine === null ? null : after.machine - before.machine;
  const own = after.own - before.own;
  // None seen (a server elsewhere, or none of its pids here): unknown, not nothing.
  const postgres = after.postgres.size ? cpuSince(before.postgres, after.postgres) : null;
  const requests = Math.max(1, result.requests.total);
  return {
    // CPU the server process used during the measured run: per request, and as a share of one core.
    serverCpuMsPerRequest: server === null ? null : round((server * 1000) / requests, 3),
    serverCpuPercentOfOneCore: server === null ? null : round((server / result.duration) * 100, 1),
    // The PostgreSQL processes the bench named, or else every local one (other users count too).
    postgresCpuMsPerRequest: postgres === null ? null : round((postgres * 1000) / requests, 3),
    loadGeneratorCpuPercentOfOneCore: round((own / result.duration) * 100, 1),
    // Everything else on the machine during the run (other users' work skews the figures).
    otherCpuPercentOfOneCore:
      server === null || busy === null
        ? null
        : round(Math.max(0, (busy - server - own - (postgres ?? 0)) / result.duration) * 100, 1),
  };
}

export interface LoadOptions {
  duration: number;
  connections: number;
  warmup: number;
  /**
   * The PostgreSQL processes whose CPU counts (a bench-only server's, or the service's backends),
   * asked before and after each measured run (a backend that appears meanwhile counts from zero);
   * absent: every process named `postgres` on the machine.
   */
  postgresPids?: () => Promise<number[]>;
}

/**
 * Runs each scenario after a warm-up, one after the other, and returns one record each:
 * autocannon's figures, the server's CPU and memory, PostgreSQL's CPU, the load generator's and
 * everyone else's CPU, and the ratio of req/s to the first scenario (the baseline).
 */
export async function runScenarios(scenarios: Scenario[], opts: LoadOptions): Promise<ScenarioResult[]> {
  const results: ScenarioResult[] = [];
  for (const scenario of scenarios) {
    log(
      `${scenario.name}: ${opts.warmup}s warm-up, ${opts.duration}s measured, ${opts.connections} connections`,
    );
    const warm = opts.warmup > 0 ? await drive(scenario, opts.connections, { duration: opts.warmup }) : null;
    const memoryBefore = memory(scenario.pid);
    const pidsBefore = await opts.postgresPids?.();
    const before = cpuReadings(scenario.pid, pidsBefore);
    const result = await drive(scenario, opts.connections, { duration: opts.duration });
    const pidsAfter = pidsBefore && [...new Set([...pidsBefore, ...((await opts.postgresPids?.()) ?? [])])];
    const cpu = cpuFigures(before, cpuReadings(scenario.pid, pidsAfter), result);
    const memoryAfter = memory(scenario.pid);
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
      ...cpu,
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
      memoryBefore,
      memoryAfter,
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

const resultOf = (results: ScenarioResult[], name: string): ScenarioResult => {
  const result = results.find((r) => r.name === name);
  if (!result) throw new Error(`no scenario ${name}`);
  return result;
};

/** How many times more requests per second scenario `a` answered than scenario `b`. */
export const reqPerSecRatio = (results: ScenarioResult[], a: string, b: string): number | null =>
  round(resultOf(results, a).reqPerSec / resultOf(results, b).reqPerSec, 3);

export interface CounterCheck {
  added: number;
  answered2xx: number;
  sent: number;
  consistent: boolean;
}

/**
 * The counter the write scenario named `scenario` increments (`before` → `after`, warm-up
 * included), read once the last run's in-flight requests have finished: every 2xx must have added
 * one. Requests still in flight when autocannon stops are processed by the service but never
 * counted as answered, so a correct counter lands between the 2xx answered and the requests sent.
 */
export async function counterAfterRun(
  results: ScenarioResult[],
  scenario: string,
  counter: { before: number; read: () => Promise<number> },
): Promise<CounterCheck & { after: number }> {
  await sleep(500); // let the in-flight requests of the last run finish
  const after = await counter.read();
  const r = resultOf(results, scenario);
  const answered2xx = (r.warmup?.status2xx ?? 0) + r.status2xx;
  const sent = (r.warmup?.requestsSent ?? 0) + r.requestsSent;
  const added = after - counter.before;
  return { after, added, answered2xx, sent, consistent: added >= answered2xx && added <= sent };
}
