// Side-by-side mode: `npm run bench:compare [-- --only=microblog,workspace --rounds=2 --duration=5]`.
// Each hot read route of each service against a bare Fastify+pg route (bare.ts) that runs the SAME
// SQL (captured from PostgreSQL's statement log while the service answered the route once: same
// text, same parameters) and answers the same JSON, in the same run, interleaved (bare, service,
// bare, service, ...), printed as ratios: service req/s ÷ bare req/s, and both p99s. Per route it
// also prints the statements per request and the rows written, both from PostgreSQL's statistics.
// It runs on a bench-only PostgreSQL server (compare/server.ts), never on the shared one.
// Not a test: it never passes or fails on a threshold. See README.md in tools/bench.
import process from 'node:process';
import { ensureServiceBuild } from './lib/build';
import { loadAverage } from './lib/machine';
import { stopNode } from './lib/processes';
import { writeReport } from './lib/report';
import { log, runMain, stamp } from './lib/run';
import { compareOptions, type CompareOptions } from './compare/options';
import { printComparison } from './compare/report';
import { compareRoute, type RouteResult } from './compare/route';
import { BENCH_DATA_DIR, benchServer } from './compare/server';
import { startServiceUnderTest } from './compare/services';

async function bench(opts: CompareOptions): Promise<void> {
  const startedAt = new Date();
  const loadAtStart = loadAverage();
  for (const name of process.env.BENCH_APPS_DIR ? [] : opts.only)
    ensureServiceBuild({ project: `${name}-api`, files: ['app.js', 'main.js'], force: opts.build });
  const server = await benchServer();
  log(`bench-only PostgreSQL in ${BENCH_DATA_DIR} (pg_stat_statements on)`);

  const results: RouteResult[] = [];
  for (const name of opts.only) {
    const sut = await startServiceUnderTest[name](server, opts);
    for (const route of sut.routes)
      if (!opts.route || route.label.includes(opts.route))
        results.push(await compareRoute(server, sut, route, opts));
    await stopNode(sut.service);
  }

  const file = writeReport(`${stamp(startedAt)}-compare`, {
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    loadAtStart,
    loadAtEnd: loadAverage(),
    options: opts,
    routes: results,
  });
  printComparison(results, opts, loadAtStart, file);
}

void runMain(compareOptions, bench);
