// The report of a run: its JSON in tools/bench/results/ (gitignored) with every figure, and the
// table on stdout.
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import process from 'node:process';
import { reportedDatabase, type DatabaseInfo, type ReportedDatabase } from './database';
import type { ScenarioResult } from './load';
import { loadAverage, memory, type Memory } from './machine';
import { round } from './numbers';
import type { BenchOptions } from './options';
import type { Service } from './processes';
import { RESULTS_DIR, ROOT } from './run';

export interface ReportHead {
  startedAt: string;
  finishedAt: string;
  /** Short hash, `(with local changes)` when the measured paths have some; null outside git. */
  commit: string | null;
  machine: {
    cpus: number;
    cpuModel: string | undefined;
    memoryGiB: number | null;
    platform: string;
    node: string;
    note: string;
    loadAverageAtStart: (number | null)[];
    loadAverageAtEnd: (number | null)[];
  };
  /** The benchmark's own options, then duration, connections and warm-up. */
  options: Record<string, number>;
}

export interface ServiceReport {
  pid: number;
  memoryIdle: Memory;
  memoryEnd: Memory;
  warnOrErrorLogTail: string | null;
}

/** What every report holds; each benchmark adds its own checks. */
export interface Report<Info extends DatabaseInfo = DatabaseInfo> extends ReportHead {
  database: ReportedDatabase<Info>;
  service: ServiceReport;
  cpuProfile: string | null;
  scenarios: ScenarioResult[];
}

/**
 * The report's common part: times, commit (marked when the project or the libs have local changes),
 * machine, the numeric options (the benchmark's own, then duration, connections and warm-up), the
 * database and the service: its memory at idle and at the end, and what it logged.
 */
export function reportHead<Own extends string, Info extends DatabaseInfo>({
  startedAt,
  loadAtStart,
  project,
  opts,
  database,
  service,
}: {
  startedAt: Date;
  loadAtStart: (number | null)[];
  /** The Nx project measured, under apps/. */
  project: string;
  opts: BenchOptions<Own>;
  database: Info;
  service: Service;
}): ReportHead & Pick<Report<Info>, 'database' | 'service'> {
  // benchOptions fills the numbers first, in this order.
  const options = Object.fromEntries(
    Object.entries(opts).filter((option): option is [string, number] => typeof option[1] === 'number'),
  );
  const paths = [`apps/${project}`, 'libs'];
  const git = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' });
  const dirty = spawnSync('git', ['status', '--porcelain', '--', ...paths], { cwd: ROOT, encoding: 'utf8' });
  const output = service.output();
  return {
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    commit:
      git.status === 0 ? git.stdout.trim() + (dirty.stdout.trim() ? ' (with local changes)' : '') : null,
    machine: {
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model,
      memoryGiB: round(os.totalmem() / 2 ** 30, 1),
      platform: `${os.type()} ${os.release()} ${os.arch()}`,
      node: process.version,
      note: 'load generator (autocannon, in the bench process), service and baseline share these cores on loopback',
      loadAverageAtStart: loadAtStart,
      loadAverageAtEnd: loadAverage(),
    },
    options,
    database: reportedDatabase(database, opts.databaseUrl),
    service: {
      pid: service.pid,
      memoryIdle: service.memoryIdle,
      memoryEnd: memory(service.pid),
      warnOrErrorLogTail: output.trim() ? output.slice(-4000) : null,
    },
  };
}

/** Writes `report` as JSON to `results/<name>.json` and returns the file. */
export function writeReport(name: string, report: unknown): string {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = path.join(RESULTS_DIR, `${name}.json`);
  writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
  return file;
}

/** Prints a table: a header, a rule, the rows; the first column left-aligned, the others right. */
export function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of rows) console.log(line(row));
}

/**
 * A table as markdown: the header, the alignment row (the first column left, the others right), the
 * rows; `|` and `<` in a cell (`/api/users/<id>`) stay text.
 */
export function markdownTable({ header, rows }: { header: string[]; rows: string[][] }): string {
  const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/</g, '&lt;');
  const line = (cells: string[]) => `| ${cells.map(cell).join(' | ')} |`;
  return [line(header), line(header.map((_, i) => (i === 0 ? ':--' : '--:'))), ...rows.map(line)].join('\n');
}

/**
 * Prints the report: a title line (`<title> — <database> (<version>), <seeded>, ...`), the machine,
 * the scenario table, the caller's `notes` lines, the service's memory and the warnings.
 */
export function printReport(
  report: Report,
  file: string,
  { title, seeded, notes = [] }: { title: string; seeded: string; notes?: string[] },
): void {
  const { database: db, machine, options: o } = report;
  console.log('');
  console.log(
    `${title} — ${db.kind === 'postgres' ? 'PostgreSQL' : 'the local PostgreSQL'} (${db.version.split(' on ')[0].split(',')[0]}), ` +
      `${seeded}, ${o.connections} connections, ${o.duration}s per scenario after ${o.warmup}s warm-up`,
  );
  console.log(
    `machine: ${machine.cpus} × ${machine.cpuModel}, ${machine.memoryGiB} GiB, ${machine.platform}, Node ${machine.node}; ${machine.note}`,
  );
  console.log(
    `load average (1/5/15 min) at start ${machine.loadAverageAtStart.join(' ')}, at end ${machine.loadAverageAtEnd.join(' ')}`,
  );
  console.log('');
  printTable(
    [
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
    ],
    report.scenarios.map((r) => [
      r.label,
      r.reqPerSec.toFixed(0),
      String(r.latencyMs.p50),
      String(r.latencyMs.p99),
      r.ratioToBaseline === null ? 'n/a' : `${r.ratioToBaseline.toFixed(3)}×`,
      r.serverCpuMsPerRequest === null ? '-' : r.serverCpuMsPerRequest.toFixed(2),
      r.postgresCpuMsPerRequest === null || r.name === 'baseline'
        ? '-'
        : r.postgresCpuMsPerRequest.toFixed(2),
      String(r.non2xx),
      r.timeouts ? `${r.errors} (${r.timeouts} t/o)` : String(r.errors),
      r.responseBytes === null ? '-' : (r.responseBytes / 1024).toFixed(1),
      `${r.memoryBefore.rssMiB}→${r.memoryAfter.rssMiB} (${r.memoryAfter.hwmMiB})`,
    ]),
  );
  console.log('');
  for (const note of notes) console.log(note);
  console.log(
    `service RSS: ${report.service.memoryIdle.rssMiB} MiB idle after start → ${report.service.memoryEnd.rssMiB} MiB at the end, peak ${report.service.memoryEnd.hwmMiB} MiB`,
  );
  for (const r of report.scenarios.filter((s) => s.non2xx || s.errors || s.timeouts)) {
    console.log(
      `WARNING: ${r.name}: ${r.non2xx} non-2xx (status codes ${JSON.stringify(r.statusCodes)}), ${r.errors} errors of which ${r.timeouts} timeouts (10 s)`,
    );
  }
  const busy = report.scenarios.filter((r) => (r.otherCpuPercentOfOneCore ?? 0) > 15);
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
