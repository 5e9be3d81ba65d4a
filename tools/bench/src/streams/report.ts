// The stream benchmark's report: its JSON shape, the table on stdout and the issue's goals beside
// the figures (reported, never asserted).
import path from 'node:path';
import type { Memory } from '../lib/machine';
import { printTable } from '../lib/report';
import { ROOT } from '../lib/run';
import type { ReadFigures, writeFigures } from './load';

/** One measured phase: steady writes (and reads), with `streams` open. */
export interface Phase {
  name: string;
  streams: number;
  /** The CPU window: the writes, then until every stream had the last event. */
  wallSeconds: number;
  /** After the last write, until every stream had the last event (null: not all within 60 s). */
  untilDeliveredMs: number | null;
  writes: ReturnType<typeof writeFigures>;
  /** Post events the phase's writes put in the log. */
  events: number;
  cpu: {
    serviceSeconds: number;
    /** Of which the kernel's, on the service's behalf (its socket writes, on loopback the delivery too). */
    serviceSystemSeconds: number;
    /** The service's CPU over the window ÷ (events × streams). */
    serviceUsPerEventPerStream: number | null;
    servicePercentOfOneCore: number | null;
    subscribersPercentOfOneCore: number | null;
    benchPercentOfOneCore: number | null;
    /** Every local `postgres` process (other users of the server count too). */
    postgresPercentOfOneCore: number | null;
    otherPercentOfOneCore: number | null;
  };
  memoryBefore: Memory;
  memoryAfter: Memory;
  delivery: {
    received: number;
    expected: number;
    missing: number;
    streamsWithEveryEvent: number;
    events: number;
    openAtEnd: number;
    endedByServer: number;
    duplicates: number;
    delayMs: Record<'min' | 'p50' | 'p90' | 'p99' | 'max', number | null>;
    sinceSentMs: Record<'p50' | 'p99' | 'max', number | null>;
    spanMs: { p50: number | null; max: number | null };
  } | null;
  reads: ReadFigures | null;
}

export interface SizeResult {
  streams: number;
  opened: number;
  openStatuses: Record<string, number>;
  openSeconds: number;
  serviceCpuMsPerStreamOpened: number | null;
  memory: {
    before: Memory;
    open: Memory;
    afterPhases: Memory;
    heapUsedMiB: { before: number | null; open: number | null; afterPhases: number | null };
    /** (RSS with the streams open − RSS before) ÷ streams, 2 s after they opened. */
    rssKiBPerStream: number | null;
    /** The same after the write phases (send buffers grown, garbage not yet collected). */
    rssKiBPerStreamAfterPhases: number | null;
    heapKiBPerStream: number | null;
  };
  /** (CPU of the writes phase − the baseline's CPU per write × its events) ÷ (events × streams). */
  fanOutUsPerEventPerStream: number | null;
  /** Reads' p99 with the streams open ÷ without. */
  readP99Ratio: number | null;
  writes: Phase;
  writesAndReads: Phase;
}

export interface StreamsReport {
  /** Short hash, `(with local changes)` when apps/microblog-api or libs have some. */
  commit: string | null;
  startedAt: string;
  finishedAt: string;
  loadAverageAtStart: (number | null)[];
  loadAverageAtEnd: (number | null)[];
  options: object;
  pinned: string | null;
  serviceEnv: Record<string, string>;
  serviceOpenFiles: { soft: number; hard: number } | null;
  database: { kind: string; version: string; posts: number };
  service: { pid: number; memoryIdle: Memory };
  cpuProfile: string | null;
  baseline: { writes: Phase; reads: Phase };
  sizes: SizeResult[];
  serviceLogTail: string | null;
}

/** Issue 24's goals for one process (reported beside the figures, not asserted). */
export const GOALS = {
  streams: 10_000,
  rssKiBPerStream: 20,
  deliveryP99Ms: 200,
  cpuUsPerEventPerStream: 5,
  readP99Ratio: 2,
} as const;

const fixed = (n: number | null | undefined, digits = 1) =>
  n === null || n === undefined ? '-' : n.toFixed(digits);

export function printStreamsReport(report: StreamsReport, file: string): void {
  const { baseline } = report;
  const b = baseline.reads.reads;
  console.log('');
  console.log(
    `microblog-api stream bench — ${report.database.kind === 'postgres' ? 'PostgreSQL' : 'the local PostgreSQL'} ` +
      `(${report.database.version.split(' on ')[0].split(',')[0]}), ${report.database.posts} posts seeded, ` +
      `pinned: ${report.pinned === null ? 'no' : `service on CPU ${report.pinned}, bench and subscribers on CPU 0`}, ` +
      `commit ${report.commit ?? 'unknown'}`,
  );
  console.log(
    `load average (1/5/15 min) at start ${report.loadAverageAtStart.join(' ')}, at end ${report.loadAverageAtEnd.join(' ')}`,
  );
  console.log(
    `no streams: writes ${baseline.writes.writes.created}/${baseline.writes.writes.sent} (201 p99 ${fixed(baseline.writes.writes.latencyMs.p99)} ms), ` +
      `service CPU ${fixed(baseline.writes.cpu.servicePercentOfOneCore)}% of a core; ` +
      `reads p50/p99/max ${b?.latencyMs.p50}/${b?.latencyMs.p99}/${b?.latencyMs.max} ms (${b?.requests} reads, ${b?.non2xx} non-2xx)`,
  );
  console.log('');
  printTable(
    [
      'streams',
      'open',
      'RSS MiB before→open',
      'KiB/stream RSS (heap)',
      'delivery p50/p99/max ms',
      'every event',
      'CPU µs/event/stream (fan-out)',
      'svc CPU %',
      'subs CPU %',
      'read p99 ms (none)',
      'read p99 ×',
    ],
    report.sizes.map((s) => {
      const d = s.writes.delivery;
      const r = s.writesAndReads.reads;
      return [
        String(s.streams),
        String(s.opened),
        `${fixed(s.memory.before.rssMiB)}→${fixed(s.memory.open.rssMiB)}`,
        `${fixed(s.memory.rssKiBPerStream)} (${fixed(s.memory.heapKiBPerStream)})`,
        d ? `${fixed(d.delayMs.p50)}/${fixed(d.delayMs.p99)}/${fixed(d.delayMs.max)}` : '-',
        d ? `${d.streamsWithEveryEvent}/${s.opened}` : '-',
        `${fixed(s.writes.cpu.serviceUsPerEventPerStream, 2)} (${fixed(s.fanOutUsPerEventPerStream, 2)})`,
        fixed(s.writes.cpu.servicePercentOfOneCore),
        fixed(s.writes.cpu.subscribersPercentOfOneCore),
        `${r?.latencyMs.p99 ?? '-'} (${b?.latencyMs.p99 ?? '-'})`,
        fixed(s.readP99Ratio, 2),
      ];
    }),
  );
  console.log('');
  for (const s of report.sizes) {
    const d = s.writes.delivery;
    const dr = s.writesAndReads.delivery;
    console.log(
      `${s.streams} streams: opened in ${s.openSeconds}s (${fixed(s.serviceCpuMsPerStreamOpened, 2)} ms of service CPU each); ` +
        `RSS after the phases ${fixed(s.memory.afterPhases.rssMiB)} MiB (${fixed(s.memory.rssKiBPerStreamAfterPhases)} KiB/stream); ` +
        `${s.writes.events} events, one event reaches every stream in ${fixed(d?.spanMs.p50)} ms (p50, max ${fixed(d?.spanMs.max)}); ` +
        `from the write's sending p50/p99 ${fixed(d?.sinceSentMs.p50)}/${fixed(d?.sinceSentMs.p99)} ms, writes' 201 p99 ${fixed(s.writes.writes.latencyMs.p99)} ms; ` +
        `service CPU ${fixed(s.writes.cpu.serviceSeconds, 2)} s of which the kernel's ${fixed(s.writes.cpu.serviceSystemSeconds, 2)} s; ` +
        `missing ${d?.missing ?? '-'}, duplicates ${d?.duplicates ?? '-'}, ended by the server ${d?.endedByServer ?? '-'}; ` +
        `with reads: delivery p99 ${fixed(dr?.delayMs.p99)} ms, writes' 201 p99 ${fixed(s.writesAndReads.writes.latencyMs.p99)} ms; ` +
        `PostgreSQL ${fixed(s.writes.cpu.postgresPercentOfOneCore)}%, others ${fixed(s.writes.cpu.otherPercentOfOneCore)}% of a core`,
    );
  }
  console.log('');
  const largest = report.sizes.reduce<SizeResult | undefined>(
    (l, s) => (!l || s.streams > l.streams ? s : l),
    undefined,
  );
  if (largest) {
    const d = largest.writes.delivery;
    const verdict = (ok: boolean | null) => (ok === null ? 'n/a' : ok ? 'met' : 'MISSED');
    const atMost = (value: number | null | undefined, goal: number) =>
      value === null || value === undefined ? null : value <= goal;
    console.log(`goals (issue 24, one process; at ${largest.streams} streams — reported, not asserted):`);
    console.log(
      `  ${GOALS.streams} streams at ≤ ${GOALS.rssKiBPerStream} KiB each: ${largest.opened} open, ${fixed(largest.memory.rssKiBPerStream)} KiB ` +
        `— ${verdict(largest.opened >= GOALS.streams && atMost(largest.memory.rssKiBPerStream, GOALS.rssKiBPerStream))}`,
    );
    console.log(
      `  p99 delivery ≤ ${GOALS.deliveryP99Ms} ms to every stream: ${fixed(d?.delayMs.p99)} ms ` +
        `— ${verdict(d ? atMost(d.delayMs.p99, GOALS.deliveryP99Ms) && d.missing === 0 : null)}`,
    );
    console.log(
      `  ≤ ${GOALS.cpuUsPerEventPerStream} µs of CPU per event per stream: ${fixed(largest.writes.cpu.serviceUsPerEventPerStream, 2)} µs ` +
        `— ${verdict(atMost(largest.writes.cpu.serviceUsPerEventPerStream, GOALS.cpuUsPerEventPerStream))}`,
    );
    console.log(
      `  reads' p99 within ${GOALS.readP99Ratio}× of no streams: ${fixed(largest.readP99Ratio, 2)}× ` +
        `— ${verdict(atMost(largest.readP99Ratio, GOALS.readP99Ratio))}`,
    );
  }
  const busy = [
    baseline.writes,
    baseline.reads,
    ...report.sizes.flatMap((s) => [s.writes, s.writesAndReads]),
  ].filter((p) => (p.cpu.otherPercentOfOneCore ?? 0) > 15);
  if (busy.length)
    console.log(
      `WARNING: other processes used CPU during ${busy.map((p) => `${p.name} (${p.cpu.otherPercentOfOneCore}% of a core)`).join(', ')}; those figures are skewed`,
    );
  if (report.serviceLogTail)
    console.log('WARNING: the service logged at warn level or above (tail in the JSON report)');
  console.log(`full figures: ${path.relative(ROOT, file)}`);
  if (report.cpuProfile) console.log(`service CPU profile (written when it stops): ${report.cpuProfile}`);
}
