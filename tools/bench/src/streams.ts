// Hand-run benchmark of microblog-api's live stream (GET /api/microblog/events):
// `npm run bench:streams [-- --streams=1000,10000 --rate=10 --duration=10]`.
// One built service on a seeded throw-away schema; N subscribers held by a few child processes on raw
// sockets; posts written at a steady rate. For each N: the delay from each write's 201 to each
// stream's receipt, the service's RSS per open stream, its CPU per event per stream, and the p99 of
// ordinary reads (GET /api/microblog) with N streams against the same reads with none, measured in
// the same run. Not a test: it never passes or fails on a threshold. See README.md in tools/bench.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import { migrateToLatest, openDatabase } from '@platform/db';
import { migrations } from '@platform/microblog-api/db/migrations';
import type { MicroblogDatabase } from '@platform/microblog-api/db/schema';
import { seedDemoData } from '@platform/microblog-api/posts/seed';
import { sql } from 'kysely';
import { ensureServiceBuild } from './lib/build';
import { analyzedDatabaseInfo, databaseEnv, throwAwayDatabase } from './lib/database';
import {
  cpuSeconds,
  cpuSince,
  cpuTimes,
  ensureOpenFileLimit,
  loadAverage,
  machineBusySeconds,
  memory,
  openFileLimit,
  pinProcesses,
  postgresCpu,
  type Memory,
} from './lib/machine';
import { round } from './lib/numbers';
import { benchOptions, type BenchOptions } from './lib/options';
import { startService, type Service } from './lib/processes';
import { writeReport } from './lib/report';
import { log, onCleanup, ROOT, runMain, stamp } from './lib/run';
import { monotonicMs, steadyPosts, steadyReads, writeFigures, type ReadFigures } from './streams/load';
import { printStreamsReport, type Phase, type SizeResult, type StreamsReport } from './streams/report';
import { Subscribers, type Deliveries } from './streams/subscribers';

const APP_DIST = path.join(ROOT, 'apps/microblog-api/dist');
const STREAM_PATH = '/api/microblog/events';
const READ_PATH = '/api/microblog';

export type StreamsOptions = BenchOptions<'posts' | 'rate' | 'reads' | 'workers' | 'pin', 'streams'>;

const options = (): StreamsOptions & { sizes: number[] } => {
  const opts = benchOptions({
    command: 'npm run bench:streams',
    project: 'microblog-api',
    schemaPrefix: 'microblog',
    own: {
      posts: { help: 'posts seeded (what the reads page through)', env: 'BENCH_POSTS', fallback: 10_000 },
      rate: { help: 'posts written per second while streams are open', env: 'BENCH_RATE', fallback: 10 },
      reads: { help: 'ordinary reads per second in the read phases', env: 'BENCH_READS', fallback: 50 },
      workers: { help: 'subscriber processes holding the streams', env: 'BENCH_WORKERS', fallback: 2 },
      pin: {
        help: '1: bench and subscribers on CPU 0, the service on the others; 0: all share every CPU',
        env: 'BENCH_PIN',
        fallback: 1,
        min: 0,
      },
    },
    text: { streams: { help: 'open streams per size, in order (default 1000,10000)', value: 'a,b' } },
    loadDefaults: { connections: 10, duration: 10, warmup: 2 },
  });
  const sizes = (opts.streams ?? '1000,10000').split(',').map(Number);
  if (!sizes.length || sizes.some((n) => !Number.isInteger(n) || n < 1))
    throw new Error(`--streams takes positive integers (got ${JSON.stringify(opts.streams)})`);
  return { ...opts, sizes };
};

/** The service's JS heap in use (MiB), from its /metrics (prom-client's Node.js metrics). */
async function heapUsedMiB(base: string): Promise<number | null> {
  try {
    const text = await (await fetch(`${base}/metrics`)).text();
    const bytes = /^nodejs_heap_size_used_bytes (\S+)$/m.exec(text)?.[1];
    return bytes === undefined ? null : round(Number(bytes) / 2 ** 20, 1);
  } catch {
    return null;
  }
}

interface Run {
  opts: StreamsOptions;
  service: Service;
  subscribers: Subscribers;
  /** The newest event id, and the post events after an id: the bench's own connection. */
  newestEvent(): Promise<number>;
  postEventsAfter(id: number): Promise<{ id: number; postId: number }[]>;
}

/** CPU seconds so far of the service, the subscribers, this process, PostgreSQL and the machine. */
function cpuReadings(run: Run) {
  const own = process.cpuUsage();
  return {
    at: monotonicMs(),
    service: cpuSeconds(run.service.pid) ?? NaN,
    serviceSystem: cpuTimes(run.service.pid)?.system ?? NaN,
    subscribers: run.subscribers.pids.reduce((sum, pid) => sum + (cpuSeconds(pid) ?? NaN), 0),
    bench: (own.user + own.system) / 1e6,
    postgres: postgresCpu(),
    machine: machineBusySeconds(),
  };
}

const share = (seconds: number, wall: number) => round((seconds / wall) * 100, 1);

/** Waits until every open stream has event `id`, or `timeoutMs`; how long it took (ms). */
async function untilDelivered(run: Run, id: number, timeoutMs: number): Promise<number | null> {
  const start = monotonicMs();
  for (;;) {
    const { reached, streams } = await run.subscribers.progress(id);
    if (reached >= streams) return round(monotonicMs() - start, 0);
    if (monotonicMs() - start > timeoutMs) {
      log(`  only ${reached} of ${streams} streams had event ${id} after ${timeoutMs / 1000}s`);
      return null;
    }
    await sleep(50);
  }
}

/** The delivery figures of a phase (ms from the 201 to the receipt). */
function deliveryFigures(d: Deliveries, events: number) {
  // Nearest rank (the delays are sorted); p = 0 is the smallest.
  const rank = (sorted: Float64Array, p: number) =>
    sorted.length
      ? round(sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))], 1)
      : null;
  const at = (p: number) => rank(d.delays, p);
  const sent = (p: number) => rank(d.sinceSent, p);
  const spans = d.last.map((last, e) => last - d.first[e]).filter((v) => !Number.isNaN(v));
  spans.sort((a, b) => a - b);
  return {
    received: d.delays.length,
    expected: d.delays.length + d.missing,
    missing: d.missing,
    streamsWithEveryEvent: d.complete,
    events,
    openAtEnd: d.open,
    endedByServer: d.endedByServer,
    duplicates: d.duplicates,
    delayMs: { min: at(0), p50: at(0.5), p90: at(0.9), p99: at(0.99), max: at(1) },
    /** From the write's sending instead of its 201: what a person waits, the write's own answer included. */
    sinceSentMs: { p50: sent(0.5), p99: sent(0.99), max: sent(1) },
    /** Per event, its last stream's receipt − its first's: the time one event takes to reach every stream. */
    spanMs: { p50: round(spans[Math.floor(spans.length / 2)] ?? NaN, 1), max: round(spans.at(-1) ?? NaN, 1) },
  };
}

/**
 * One measured phase: posts at the steady rate for `--duration` seconds (and reads at their rate
 * when `reads`), then until every stream has the last event; the CPU of each process over that
 * window, and what the streams received.
 */
async function phase(run: Run, name: string, streams: number, reads: boolean): Promise<Phase> {
  const { opts, service } = run;
  log(
    `${name}: ${streams} streams, ${opts.rate} posts/s${reads ? `, ${opts.reads} reads/s` : ''}, ${opts.duration}s`,
  );
  const head = await run.newestEvent();
  const memoryBefore = memory(service.pid);
  const before = cpuReadings(run);
  const [writes, readFigures] = await Promise.all([
    steadyPosts(service.base, opts.rate, opts.duration),
    reads
      ? steadyReads(`${service.base}${READ_PATH}`, opts.reads, opts.connections, opts.duration)
      : Promise.resolve(null),
  ]);
  const events = await run.postEventsAfter(head);
  const newest = events.at(-1)?.id ?? head;
  const drainMs = streams ? await untilDelivered(run, newest, 60_000) : 0;
  const after = cpuReadings(run);
  const wall = (after.at - before.at) / 1000;
  const serviceCpu = after.service - before.service;
  const subscribersCpu = after.subscribers - before.subscribers;
  const benchCpu = after.bench - before.bench;
  const postgresCpuSeconds = cpuSince(before.postgres, after.postgres);
  const machine = before.machine === null || after.machine === null ? null : after.machine - before.machine;

  // Each event's write: when it was sent and when its 201 came.
  const written = new Map(writes.filter((w) => w.postId !== null).map((w) => [w.postId!, w]));
  const timed = events.flatMap((e): [number, number, number][] => {
    const write = written.get(e.postId);
    return write ? [[e.id, write.ackedAt, write.sentAt]] : [];
  });
  const delivery = streams ? deliveryFigures(await run.subscribers.collect(timed), timed.length) : null;
  return {
    name,
    streams,
    wallSeconds: round(wall, 2)!,
    untilDeliveredMs: drainMs,
    writes: writeFigures(writes),
    events: events.length,
    cpu: {
      serviceSeconds: round(serviceCpu, 3)!,
      serviceSystemSeconds: round(after.serviceSystem - before.serviceSystem, 3)!,
      serviceUsPerEventPerStream:
        streams && events.length ? round((serviceCpu * 1e6) / (events.length * streams), 2) : null,
      servicePercentOfOneCore: share(serviceCpu, wall),
      subscribersPercentOfOneCore: share(subscribersCpu, wall),
      benchPercentOfOneCore: share(benchCpu, wall),
      postgresPercentOfOneCore: share(postgresCpuSeconds, wall),
      otherPercentOfOneCore:
        machine === null
          ? null
          : share(Math.max(0, machine - serviceCpu - subscribersCpu - benchCpu - postgresCpuSeconds), wall),
    },
    memoryBefore,
    memoryAfter: memory(service.pid),
    delivery,
    reads: readFigures as ReadFigures | null,
  };
}

/** Opens `size` streams, measures them, closes them. */
async function measureSize(
  run: Run,
  size: number,
  baseline: { writes: Phase; reads: Phase },
): Promise<SizeResult> {
  const { service, subscribers, opts } = run;
  const memoryBefore = memory(service.pid);
  const heapBefore = await heapUsedMiB(service.base);
  log(`opening ${size} streams over ${subscribers.count} subscriber processes ...`);
  const cpuBefore = cpuSeconds(service.pid) ?? NaN;
  const openStart = monotonicMs();
  const opened = await subscribers.open(`${service.base}${STREAM_PATH}`, size);
  const openSeconds = (monotonicMs() - openStart) / 1000;
  const openCpu = (cpuSeconds(service.pid) ?? NaN) - cpuBefore;
  log(`  ${opened.open} open in ${openSeconds.toFixed(1)}s (statuses ${JSON.stringify(opened.statuses)})`);
  await sleep(2000);
  const memoryOpen = memory(service.pid);
  const heapOpen = await heapUsedMiB(service.base);

  // Unmeasured: the first events through N streams (the JIT's, the sockets' buffers).
  if (opts.warmup > 0) {
    const head = await run.newestEvent();
    await steadyPosts(service.base, opts.rate, opts.warmup);
    const events = await run.postEventsAfter(head);
    if (events.length) await untilDelivered(run, events.at(-1)!.id, 60_000);
    await subscribers.collect([]);
  }
  const writes = await phase(run, `${size} streams: writes`, opened.open, false);
  const reads = await phase(run, `${size} streams: writes + reads`, opened.open, true);
  const memoryAfter = memory(service.pid);
  const heapAfter = await heapUsedMiB(service.base);
  await subscribers.close();
  await sleep(2000);

  const perStreamKiB = (a: number | null, b: number | null) =>
    a === null || b === null || !opened.open ? null : round(((a - b) * 1024) / opened.open, 1);
  // The CPU of the writes themselves (no stream), per event, from the baseline phase.
  const writeCpuPerEvent = baseline.writes.cpu.serviceSeconds / Math.max(1, baseline.writes.events);
  const fanOutCpu = writes.cpu.serviceSeconds - writeCpuPerEvent * writes.events;
  return {
    streams: size,
    opened: opened.open,
    openStatuses: opened.statuses,
    openSeconds: round(openSeconds, 1)!,
    serviceCpuMsPerStreamOpened: opened.open ? round((openCpu * 1000) / opened.open, 3) : null,
    memory: {
      before: memoryBefore,
      open: memoryOpen,
      afterPhases: memoryAfter,
      heapUsedMiB: { before: heapBefore, open: heapOpen, afterPhases: heapAfter },
      rssKiBPerStream: perStreamKiB(memoryOpen.rssMiB, memoryBefore.rssMiB),
      rssKiBPerStreamAfterPhases: perStreamKiB(memoryAfter.rssMiB, memoryBefore.rssMiB),
      heapKiBPerStream: perStreamKiB(heapOpen, heapBefore),
    },
    fanOutUsPerEventPerStream:
      writes.events && opened.open ? round((fanOutCpu * 1e6) / (writes.events * opened.open), 2) : null,
    readP99Ratio:
      reads.reads && baseline.reads.reads && baseline.reads.reads.latencyMs.p99
        ? round(reads.reads.latencyMs.p99 / baseline.reads.reads.latencyMs.p99, 2)
        : null,
    writes,
    writesAndReads: reads,
  };
}

async function bench(opts: StreamsOptions & { sizes: number[] }): Promise<void> {
  const startedAt = new Date();
  const loadAtStart = loadAverage();
  ensureServiceBuild({ project: 'microblog-api', files: ['app.js', 'main.js'], force: opts.build });
  const largest = Math.max(...opts.sizes);

  // File descriptors: a socket per stream in the service and in its subscriber process.
  const ownLimit = openFileLimit(process.pid);
  const perWorker = Math.ceil(largest / opts.workers) + 256;
  if (ownLimit && ownLimit.hard < perWorker)
    throw new Error(
      `a subscriber process needs ${perWorker} open files and the hard limit is ${ownLimit.hard}: ` +
        `raise it (\`ulimit -Hn\` as root) or use more --workers`,
    );

  log(`seeding ${opts.posts} posts ...`);
  const throwAway = await throwAwayDatabase('microblog', opts.databaseUrl);
  const database = await openDatabase<MicroblogDatabase>({ ...throwAway.config, poolMax: 1 });
  onCleanup(() => database.close());
  await migrateToLatest(database.db, database.schema, migrations);
  await seedDemoData(database.db, opts.posts);
  const db = await analyzedDatabaseInfo(database.db, throwAway);

  // The service as it runs in production, with room for the streams: the process's stream cap and
  // connection cap above the largest size, and no per-address cap (every subscriber connects from
  // 127.0.0.1; the cap is a defence against one address, not part of what is measured).
  const cpuProfile = opts.cpuProf ? `${stamp(startedAt)}-streams-microblog-api.cpuprofile` : undefined;
  const serviceEnv = {
    EVENTS_MAX_STREAMS: String(largest + 64),
    MAX_CONNECTIONS: String(largest + 1024),
    MAX_CONNECTIONS_PER_ADDRESS: '0',
    WRITE_LIMIT_WITHOUT_CLIENT_ID: '1000000000',
    WRITE_LIMIT_PER_ADDRESS: '1000000000',
  };
  const service = await startService(
    'microblog-api',
    path.join(APP_DIST, 'main.js'),
    databaseEnv(throwAway.config, serviceEnv),
    cpuProfile,
  );
  const serviceFiles = ensureOpenFileLimit(service.pid, largest + 1024);
  log(`service may open ${serviceFiles?.soft} files (hard limit ${serviceFiles?.hard})`);

  // The bench (writes, reads) and the subscriber processes forked from it on CPU 0, the service on
  // the others; PostgreSQL where the machine puts it.
  const pinned = opts.pin ? pinProcesses([service.pid]) : null;
  const subscribers = Subscribers.start(opts.workers);
  const run: Run = {
    opts,
    service,
    subscribers,
    async newestEvent() {
      const { rows } = await sql<{ id: string | null }>`select max(id) as id from events`.execute(
        database.db,
      );
      return Number(rows[0].id ?? 0);
    },
    async postEventsAfter(id) {
      const { rows } = await sql<{ id: string; post_id: number }>`
        select id, (payload->>'id')::int as post_id from events
        where id > ${id} and kind = 'post' order by id`.execute(database.db);
      return rows.map((r) => ({ id: Number(r.id), postId: r.post_id }));
    },
  };

  // Unmeasured warm-up, then the baseline: the same writes and reads, no stream open.
  if (opts.warmup > 0)
    await Promise.all([
      steadyPosts(service.base, opts.rate, opts.warmup),
      steadyReads(`${service.base}${READ_PATH}`, opts.reads, opts.connections, opts.warmup),
    ]);
  const baseline = {
    writes: await phase(run, 'no streams: writes', 0, false),
    reads: await phase(run, 'no streams: writes + reads', 0, true),
  };
  const sizes: SizeResult[] = [];
  for (const size of opts.sizes) sizes.push(await measureSize(run, size, baseline));

  const git = (args: string[]) => spawnSync('git', args, { cwd: ROOT, encoding: 'utf8' });
  const head = git(['rev-parse', '--short', 'HEAD']);
  const dirty = git(['status', '--porcelain', '--', 'apps/microblog-api', 'libs']).stdout.trim();
  const report: StreamsReport = {
    commit: head.status === 0 ? head.stdout.trim() + (dirty ? ' (with local changes)' : '') : null,
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    loadAverageAtStart: loadAtStart,
    loadAverageAtEnd: loadAverage(),
    options: { ...opts, databaseUrl: opts.databaseUrl ? '(set)' : undefined },
    pinned,
    serviceEnv,
    serviceOpenFiles: serviceFiles,
    database: { kind: db.kind, version: db.version, posts: opts.posts },
    service: { pid: service.pid, memoryIdle: service.memoryIdle as Memory },
    cpuProfile: cpuProfile ? `tools/bench/results/${cpuProfile}` : null,
    baseline,
    sizes,
    serviceLogTail: service.output().trim() ? service.output().slice(-4000) : null,
  };
  const file = writeReport(`${stamp(startedAt)}-streams`, report);
  printStreamsReport(report, file);
}

void runMain(options, bench);
