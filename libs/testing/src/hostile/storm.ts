/**
 * The storm: thousands of generated requests no service may accept, sent concurrently to a real
 * listening server, then the integer sweep and malformed framing on raw sockets, every answer
 * checked. The first failures of each route are then replayed and shrunk by fast-check, so the
 * report shows the smallest request that still fails, and the seed that replays the whole storm.
 */
import { Agent } from 'node:http';
import fc from 'fast-check';
import type { ErrorDialect } from '@platform/http-kit';
import { answerProblems, describeRequest, send, type SeenResponse } from './answers';
import { malformedFraming, rawAnswer } from './framing';
import { integerSweep } from './integers';
import { HostileGenerator, routeSeed, type Generated, type GeneratorOptions } from './requests';
import {
  bodyLength,
  buildRequest,
  exampleDraft,
  routeKey,
  type HostileRequest,
  type HostileRoute,
} from './routes';
import { shrinkFailure, type Judged, type Minimal, type Replay, type ShrinkOptions } from './shrink';

/** The seed of a storm: HOSTILE_SEED when set (to replay a failure), else `fallback`. */
export function hostileSeed(fallback: number, env: NodeJS.ProcessEnv = process.env): number {
  const given = env.HOSTILE_SEED;
  if (given === undefined || given === '') return fallback >>> 0;
  const seed = Number(given);
  if (!Number.isSafeInteger(seed)) throw new Error(`HOSTILE_SEED must be an integer, not ${given}`);
  return seed >>> 0;
}

export interface StormOptions extends GeneratorOptions {
  /** `http://127.0.0.1:<port>` of the real, listening service. */
  baseUrl: string;
  routes: HostileRoute[];
  /** Requests to send over HTTP (framing exchanges on raw sockets come on top). */
  count: number;
  /** The service's error format: every answer must be in it. */
  dialect: ErrorDialect;
  /** Requests in flight at once (default 8). */
  concurrency?: number;
  /** Bytes of oversized bodies the storm may send in all (default 48 MiB). */
  hugeBodyBudget?: number;
  /**
   * Failures shrunk (the first of each route and framing kind, default 5), and the time all the
   * shrinking may take (default 30 s: a storm test still ends within its timeout to report them).
   */
  shrink?: { failures?: number; timeLimitMs?: number };
}

/** One request that did not get the answer it must get. */
export interface StormFailure {
  request: string;
  reasons: string[];
  problems: string[];
  status?: number;
  body?: string;
  /** Where fast-check finds the request again (generated requests and framing; not the sweep's). */
  replay?: Replay;
  /** The smallest request fast-check's shrinking found that fails the same way (shrunk failures only). */
  minimal?: Minimal;
}

export interface StormReport {
  seed: number;
  /** HTTP requests sent, and raw framing exchanges. */
  sent: number;
  framing: number;
  /** Answers by status. */
  statuses: Record<number, number>;
  /** Requests by the mutation that makes them invalid. */
  mutations: Record<string, number>;
  failures: StormFailure[];
  /**
   * The integer sweep: every integer parameter of every route (`"METHOD /path part.field"`), each
   * sent every out-of-range integer its schemas and rules refuse (`sent` requests in all).
   */
  integers: { targets: string[]; sent: number };
  durationMs: number;
}

/** A failure fast-check can replay and shrink: its arbitrary, run, and how to send a value. */
type Shrinkable = Omit<ShrinkOptions<unknown>, 'problems' | 'timeLimitMs'> & { group: string };

/**
 * Sends `count` generated requests across `routes` (each route as often as it has parts to attack,
 * its requests read in order from its seed), `concurrency` at a time over keep-alive connections,
 * then the integer sweep and the malformed-framing exchanges on raw sockets; checks every answer
 * (`errorResponseProblems`) and shrinks the first failures.
 */
export async function runHostileStorm(options: StormOptions): Promise<StormReport> {
  const started = Date.now();
  const generator = new HostileGenerator(options);
  const base = new URL(options.baseUrl);
  const concurrency = options.concurrency ?? 8;
  // No Nagle delay: a request's headers and body go out in separate writes.
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency, noDelay: true } as never);
  const report: StormReport = {
    seed: options.seed,
    sent: 0,
    framing: 0,
    statuses: {},
    mutations: {},
    failures: [],
    integers: { targets: [], sent: 0 },
    durationMs: 0,
  };
  const shrinkable = new Map<StormFailure, Shrinkable>();
  const judged = (seen: SeenResponse | Error): Judged => ({
    problems: answerProblems(options.dialect, seen),
    ...(seen instanceof Error ? {} : { status: seen.status, body: seen.body.slice(0, 300) }),
  });
  const record = (
    sent: { description: string; mutation: string; reasons: string[] },
    seen: SeenResponse | Error,
    replay?: Shrinkable,
  ) => {
    report.mutations[sent.mutation] = (report.mutations[sent.mutation] ?? 0) + 1;
    if (!(seen instanceof Error)) report.statuses[seen.status] = (report.statuses[seen.status] ?? 0) + 1;
    const answer = judged(seen);
    if (!answer.problems.length) return;
    const failure: StormFailure = {
      request: sent.description,
      reasons: sent.reasons,
      ...answer,
      ...(replay ? { replay: { seed: replay.seed, path: String(replay.index) } } : {}),
    };
    report.failures.push(failure);
    if (replay) shrinkable.set(failure, replay);
  };
  const sendGenerated = async (generated: Generated & { request: HostileRequest }) => ({
    description: describeRequest(generated.request),
    mutation: generated.mutation,
    reasons: generated.reasons,
    seen: await send(agent, base, generated.request),
  });
  const shrinkingOf = (route: HostileRoute, index: number): Shrinkable => ({
    group: routeKey(route),
    arbitrary: generator.arbitrary(route) as Shrinkable['arbitrary'],
    seed: generator.seedOf(route),
    index,
    judge: async (value) => judged(await send(agent, base, buildRequest(route, (value as Generated).draft))),
    describe: (value) => {
      const request = buildRequest(route, (value as Generated).draft);
      return { request: describeRequest(request), sent: request };
    },
  });

  // The storm: each route's requests in turn, oversized bodies within the budget.
  const schedule = routeSchedule(options.routes);
  let hugeBytesLeft = options.hugeBodyBudget ?? 48 * 1024 * 1024;
  const nextRequest = (route: HostileRoute) => {
    for (;;) {
      const generated = generator.next(route);
      const size = bodyLength(generated.draft);
      if (size > options.bodyLimit) {
        if (size > hugeBytesLeft) continue;
        hugeBytesLeft -= size;
      }
      const { draft, mutation, reasons, index } = generated;
      return { route, draft, mutation, reasons, index, request: generated.request };
    }
  };
  let next = 0;
  const worker = async () => {
    while (next < options.count) {
      const route = schedule[next++ % schedule.length];
      const generated = nextRequest(route);
      const { seen, ...sent } = await sendGenerated(generated);
      record(sent, seen, shrinkingOf(route, generated.index));
      report.sent++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));

  // The integer sweep: every integer parameter, every out-of-range integer (not drawn at random).
  const sweep = options.routes.flatMap((route) => integerSweep(route, generator, options));
  report.integers.targets = [...new Set(sweep.map((item) => item.target))];
  for (const item of sweep)
    if (!item.generated)
      report.failures.push({
        request: `${item.target} = ${item.value}`,
        reasons: ['an integer beyond JavaScript’s exact integers'],
        problems: ['its schemas and rules accept it: declare the parameter’s range'],
      });
  const requests = sweep.flatMap((item) => (item.generated ? [item.generated] : []));
  let nextSweep = 0;
  const sweeper = async () => {
    while (nextSweep < requests.length) {
      const { seen, ...sent } = await sendGenerated(requests[nextSweep++]);
      record(sent, seen);
      report.integers.sent++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, sweeper));

  // Malformed framing: one variant of each kind, for each route.
  const port = Number(base.port);
  for (const route of options.routes) {
    const path = buildRequest(route, { ...exampleDraft(route), query: [], headers: {}, body: undefined }).url;
    for (const { name, arbitrary } of malformedFraming(route.method, path)) {
      const seed = routeSeed(options.seed, route, ` ${name}`);
      const [raw] = fc.sample(arbitrary, { seed, numRuns: 1 });
      const description = (text: string) => `${name}: ${JSON.stringify(text.slice(0, 200))}`;
      record(
        { description: description(raw), mutation: `framing: ${name}`, reasons: [name] },
        await rawAnswer(port, raw),
        {
          group: `${routeKey(route)} ${name}`,
          arbitrary: arbitrary as Shrinkable['arbitrary'],
          seed,
          index: 0,
          judge: async (value) => judged(await rawAnswer(port, value as string)),
          describe: (value) => ({ request: description(value as string), sent: value }),
        },
      );
      report.framing++;
    }
  }

  await shrinkFirstFailures(report, shrinkable, options.shrink);
  agent.destroy();
  report.durationMs = Date.now() - started;
  return report;
}

/**
 * Shrinks the first failure of each route (and framing kind), one after the other, within one time
 * budget shared out among them.
 */
async function shrinkFirstFailures(
  report: StormReport,
  shrinkable: Map<StormFailure, Shrinkable>,
  limits: StormOptions['shrink'] = {},
) {
  const groups = new Map<string, [StormFailure, Shrinkable]>();
  for (const failure of report.failures) {
    const replay = shrinkable.get(failure);
    if (replay && !groups.has(replay.group) && groups.size < (limits.failures ?? 5))
      groups.set(replay.group, [failure, replay]);
  }
  const deadline = Date.now() + (limits.timeLimitMs ?? 30_000);
  let left = groups.size;
  for (const [failure, replay] of groups.values()) {
    const timeLimitMs = Math.max(1, (deadline - Date.now()) / left--);
    failure.minimal = await shrinkFailure({ ...replay, problems: failure.problems, timeLimitMs });
  }
}

/**
 * The routes in the order the storm visits them, each as often as it has parts to attack: a body,
 * a query string and path parameters weigh more than a bare path.
 */
export function routeSchedule(routes: HostileRoute[]): HostileRoute[] {
  return routes.flatMap((route) => {
    const weight =
      1 +
      (route.schemas?.body || route.body ? 6 : 0) +
      (route.schemas?.query || route.query ? 3 : 0) +
      (route.params && Object.keys(route.params).length ? 2 : 0);
    return Array.from({ length: weight }, () => route);
  });
}

/** A storm in one line: seed, counts, time, statuses, mutations, the integer sweep. */
export function describeStorm(report: StormReport): string {
  return (
    `seed ${report.seed}, ${report.sent} requests + ${report.framing} framing in ${report.durationMs} ms; ` +
    `statuses ${JSON.stringify(report.statuses)}; mutations ${JSON.stringify(report.mutations)}; ` +
    `integer sweep: ${report.integers.sent} requests to ${report.integers.targets.length} parameters`
  );
}

const describeMinimal = (minimal: Minimal | undefined) => {
  if (!minimal) return '';
  if (!minimal.reproduced) return `\n    minimal: none (${minimal.reason})`;
  const cut = minimal.interrupted ? ', cut short by its time limit' : '';
  return (
    `\n    minimal (shrunk in ${minimal.shrinks} steps${cut}; fast-check seed ${minimal.replay.seed}, ` +
    `path "${minimal.replay.path}"): ${minimal.request}` +
    (minimal.status !== undefined ? `\n      answer: ${minimal.status} ${minimal.body}` : '')
  );
};

/** Throws, naming the seed and the smallest failing requests, when a storm had failures. */
export function assertStormClean(report: StormReport, shown = 15): void {
  if (report.failures.length === 0) return;
  // The shrunk failures first: their smallest requests say most.
  const lines = [...report.failures.filter((f) => f.minimal), ...report.failures.filter((f) => !f.minimal)]
    .slice(0, shown)
    .map(
      (f) =>
        `- ${f.request}\n    must fail because: ${f.reasons.join(', ')}\n    but: ${f.problems.join('; ')}${
          f.status !== undefined ? `\n    answer: ${f.status} ${f.body}` : ''
        }${describeMinimal(f.minimal)}`,
    );
  throw new Error(
    `hostile storm with seed ${report.seed} (replay: HOSTILE_SEED=${report.seed}): ` +
      `${report.failures.length} of ${report.sent + report.framing + report.integers.sent} requests were not refused in the dialect\n` +
      lines.join('\n'),
  );
}
