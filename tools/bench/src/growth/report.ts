// The growth benchmark's report: its JSON (every figure), and the same tables on stdout and in a
// markdown file beside the JSON: one per size, then each deep page's ratio at every size.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { DatabaseInfo } from '../lib/database';
import type { ScenarioResult } from '../lib/load';
import { markdownTable, printTable, type Report } from '../lib/report';
import { ROOT } from '../lib/run';
import type { Cell } from './collections';

export interface MeasuredCollection {
  name: string;
  label: string;
  total: number;
  cells: (Cell & { result: ScenarioResult })[];
}

export interface SizeResult {
  posts: number;
  /** Seconds to grow the posts to this size (not measured). */
  seedSeconds: number | null;
  collections: MeasuredCollection[];
}

export interface GrowthDatabase extends DatabaseInfo {
  users: number;
  /** Rows of `followers` (fake users' own 0–5 each, the star's followers, the bench user's). */
  follows: number;
  analyzed: true;
}

export interface GrowthReport extends Omit<Report<GrowthDatabase>, 'scenarios' | 'cpuProfile'> {
  star: { id: number; postShare: number; followers: number };
  benchUser: { id: number; username: string; following: number };
  /** Which PostgreSQL processes the `pg CPU` figures count. */
  postgresCpu: string;
  sizes: SizeResult[];
}

const ms = (value: number | null) => (value === null ? '-' : value.toFixed(2));
const ratio = (r: ScenarioResult) =>
  r.ratioToBaseline === null ? 'n/a' : `${r.ratioToBaseline.toFixed(2)}×`;

/** The table of one size: a row per page measured. */
function sizeTable(size: SizeResult): { header: string[]; rows: string[][] } {
  return {
    header: [
      'collection (size)',
      'page',
      'items',
      'req/s',
      '× first',
      'p99 ms',
      'node CPU ms/req',
      'pg CPU ms/req',
      'non-2xx / errors',
    ],
    rows: size.collections.flatMap((c) =>
      c.cells.map(({ cell, items, result: r }) => [
        `${c.label} (${c.total})`,
        cell,
        String(items),
        r.reqPerSec.toFixed(0),
        ratio(r),
        String(r.latencyMs.p99),
        ms(r.serverCpuMsPerRequest),
        ms(r.postgresCpuMsPerRequest),
        `${r.non2xx} / ${r.errors}`,
      ]),
    ),
  };
}

/** Each page's ratio to its collection's first page (and its req/s) at every size. */
function growthTable(sizes: SizeResult[]): { header: string[]; rows: string[][] } {
  const first = sizes[0];
  return {
    header: ['collection', 'page', ...sizes.map((s) => `${s.posts} posts: × first (req/s)`)],
    rows: first.collections.flatMap((c, i) =>
      c.cells.map(({ cell }, j) => [
        c.label,
        cell,
        ...sizes.map((s) => {
          const r = s.collections[i].cells[j].result;
          return `${ratio(r)} (${r.reqPerSec.toFixed(0)})`;
        }),
      ]),
    ),
  };
}

/** The report as markdown: the title lines, the growth table, then a table per size. */
function markdown(report: GrowthReport, title: string[]): string {
  return [
    '# social-api growth benchmark',
    '',
    ...title.map((line) => `${line}  `),
    '',
    "## Each page against its collection's first page, at every size",
    '',
    markdownTable(growthTable(report.sizes)),
    ...report.sizes.flatMap((size) => ['', `## ${size.posts} posts`, '', markdownTable(sizeTable(size))]),
    '',
  ].join('\n');
}

/** Prints the report and writes it as markdown beside its JSON `file`; returns the markdown file. */
export function printGrowth(report: GrowthReport, file: string): string {
  const { database: db, machine, options: o } = report;
  const title = [
    `social-api growth — ${db.kind === 'postgres' ? 'PostgreSQL' : 'the local PostgreSQL'} (${db.version.split(' on ')[0].split(',')[0]}), ` +
      `${db.users} users, ${db.follows} follows (the star followed by ${report.star.followers} and writing ` +
      `${report.star.postShare * 100} % of the posts, the bench user following ${report.benchUser.following}), ` +
      `${o.connections} connections, ${o.duration}s per page after ${o.warmup}s warm-up`,
    `machine: ${machine.cpus} × ${machine.cpuModel}, ${machine.platform}, Node ${machine.node}; ` +
      `load average (1/5/15 min) at start ${machine.loadAverageAtStart.join(' ')}, at end ${machine.loadAverageAtEnd.join(' ')}`,
    `× first: req/s ÷ the req/s of the collection's first page measured just before it; pg CPU: ${report.postgresCpu}`,
  ];
  console.log('');
  for (const line of title) console.log(line);
  for (const size of report.sizes) {
    console.log('');
    console.log(`${size.posts} posts:`);
    const { header, rows } = sizeTable(size);
    printTable(header, rows);
  }
  console.log('');
  const { header, rows } = growthTable(report.sizes);
  printTable(header, rows);
  console.log('');
  const failing = report.sizes.flatMap((s) =>
    s.collections.flatMap((c) =>
      c.cells
        .filter((x) => x.result.non2xx || x.result.errors)
        .map((x) => `${s.posts} posts: ${x.result.name}`),
    ),
  );
  if (failing.length) console.log(`WARNING: non-2xx answers or errors in ${failing.join(', ')}`);
  if (report.service.warnOrErrorLogTail)
    console.log('WARNING: the service logged at warn level or above (tail in the JSON report)');
  const markdownFile = file.replace(/\.json$/, '.md');
  writeFileSync(markdownFile, markdown(report, title));
  console.log(`full figures: ${path.relative(ROOT, file)}, tables: ${path.relative(ROOT, markdownFile)}`);
  return markdownFile;
}
