// The side-by-side table on stdout, a row per route (the figures of every round, then the CPU per
// request of Node and of PostgreSQL, and the statements each route sends).
import path from 'node:path';
import { loadAverage } from '../lib/machine';
import { median } from '../lib/numbers';
import { printTable } from '../lib/report';
import { ROOT } from '../lib/run';
import type { CompareOptions } from './options';
import type { RouteResult } from './route';

export function printComparison(
  results: RouteResult[],
  opts: CompareOptions,
  loadAtStart: (number | null)[],
  file: string,
): void {
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
    `load average (1/5/15 min) at start ${loadAtStart.join(' ')}, at end ${loadAverage().join(' ')}`,
  );
  console.log('');
  type Round = RouteResult['rounds'][number];
  const perRound = (r: RouteResult, cell: (x: Round) => string) => r.rounds.map(cell).join(' ');
  const ms = (value: number | null) => value?.toFixed(2) ?? '-';
  /** A CPU figure of both sides, per round: `service/bare`. */
  const cpu = (r: RouteResult, figure: (x: Round['service']) => number | null) =>
    perRound(r, (x) => `${ms(figure(x.service))}/${ms(figure(x.bare))}`);
  printTable(
    [
      'route',
      'service req/s',
      'bare req/s',
      'ratio',
      'p99 ms svc/bare',
      'node CPU ms/req svc/bare',
      'pg CPU ms/req svc/bare',
      'stmts/req svc',
      'stmts/req bare',
      'plans/req svc/bare',
      'same SQL',
      'named',
      'rows written/req',
      'body KiB',
    ],
    results.map((r) => [
      r.label,
      perRound(r, (x) => x.service.reqPerSec.toFixed(0)),
      perRound(r, (x) => x.bare.reqPerSec.toFixed(0)),
      `${perRound(r, (x) => (x.ratio ?? NaN).toFixed(2))} (median ${r.ratio?.toFixed(2) ?? 'n/a'})`,
      perRound(r, (x) => `${x.service.latencyMs.p99}/${x.bare.latencyMs.p99}`),
      cpu(r, (x) => x.serverCpuMsPerRequest),
      cpu(r, (x) => x.postgresCpuMsPerRequest),
      r.service.statementsPerRequest.toFixed(2),
      r.bare.statementsPerRequest.toFixed(2),
      `${r.service.plansPerRequest.toFixed(2)}/${r.bare.plansPerRequest.toFixed(2)}`,
      (r.sameStatements ? 'yes' : 'NO') +
        (r.otherPerRequest > 0 ? ` (+${r.otherPerRequest.toFixed(2)} other)` : ''),
      `${r.statements.filter((x) => x.named).length}/${r.statements.length}`,
      r.service.rowsWrittenPerRequest.toFixed(2),
      (r.bytes / 1024).toFixed(1),
    ]),
  );
  console.log('');
  console.log(
    'ms of CPU per request, median of the rounds (PostgreSQL: every process of the bench-only server):',
  );
  const middle = (r: RouteResult, figure: (x: Round) => number | null) =>
    ms(median(r.rounds.map((x) => figure(x) ?? NaN)));
  for (const r of results)
    console.log(
      `  ${r.label}: node ${middle(r, (x) => x.service.serverCpuMsPerRequest)}, postgres ${middle(r, (x) => x.service.postgresCpuMsPerRequest)}` +
        ` (bare route: node ${middle(r, (x) => x.bare.serverCpuMsPerRequest)}, postgres ${middle(r, (x) => x.bare.postgresCpuMsPerRequest)})`,
    );
  console.log('');
  for (const r of results) {
    console.log(`${r.label}: the statements it sends (captured, replayed by the bare route; * named):`);
    for (const s of r.statements)
      console.log(`  ${s.named ? '*' : ' '} ${s.text.replace(/\s+/g, ' ').trim().slice(0, 160)}`);
  }
  const busy = results
    .flatMap((r) => r.rounds.flatMap((x) => [x.bare, x.service]))
    .filter((x) => (x.otherCpuPercentOfOneCore ?? 0) > 15);
  if (busy.length)
    console.log(
      `WARNING: other processes used more than 15 % of a core during ${busy.length} runs; absolute figures are skewed, ratios less so`,
    );
  console.log(`full figures: ${path.relative(ROOT, file)}`);
}
