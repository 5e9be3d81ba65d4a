// What a route sends to PostgreSQL: its statements captured from the bench-only server's statement
// log (for bare.ts to replay), and counted from the server's statistics (statements and rows
// written per request, for the service and for the bare route).
import { readFileSync, statSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CapturedStatement } from '../bare';
import { drive, type Target } from '../lib/load';
import type { BenchServer } from './server';

/** Requests over which statements and writes are counted. */
const COUNTED_REQUESTS = 200;

/** The parameters of a `DETAIL:  parameters: $1 = '...', $2 = NULL` line, in order. */
function parseParameters(detail: string): (string | null)[] {
  const values: (string | null)[] = [];
  for (const m of detail.matchAll(/\$(\d+) = (NULL|'((?:[^']|'')*)')/g))
    values[Number(m[1]) - 1] = m[2] === 'NULL' ? null : m[3].replace(/''/g, "'");
  return values;
}

/**
 * The statements other sessions sent while `act` ran, from the server's log (`log_statement = all`
 * for that moment only, set with ALTER SYSTEM and a reload so the service's open connections follow).
 * Stderr log lines: `<time> [<pid>] LOG:  execute <unnamed>: <sql>` or `... LOG:  statement: <sql>`,
 * continuation lines start with a tab, then `<time> [<pid>] DETAIL:  parameters: $1 = '...'`. Only
 * the entries logged while `act` ran count (the log's time, in milliseconds, UTC).
 */
async function captureOnce(server: BenchServer, act: () => Promise<unknown>): Promise<CapturedStatement[]> {
  const { admin } = server;
  const from = statSync(server.logFile).size;
  await admin.query(`alter system set log_statement = 'all'`);
  await admin.query('select pg_reload_conf()');
  await sleep(300); // every backend has read the new configuration
  const started = Date.now();
  await act();
  const ended = Date.now();
  await admin.query('alter system reset log_statement');
  await admin.query('select pg_reload_conf()');
  await sleep(300);
  const text = readFileSync(server.logFile).subarray(from).toString('utf8');
  const entries: { at: number; pid: number; kind: string; body: string }[] = [];
  for (const line of text.split('\n')) {
    const head = /^(\S+) (\S+) (\S+) \[(\d+)\] (\w+): {2}(.*)$/.exec(line);
    if (head) {
      const at = head[3] === 'UTC' ? Date.parse(`${head[1]}T${head[2]}Z`) : NaN;
      entries.push({ at, pid: Number(head[4]), kind: head[5], body: head[6] });
    } else if (line.startsWith('\t') && entries.length)
      entries[entries.length - 1].body += `\n${line.slice(1)}`;
  }
  const during = (at: number) => Number.isNaN(at) || (at >= started - 2 && at <= ended + 2);
  const statements: CapturedStatement[] = [];
  for (const [i, e] of entries.entries()) {
    if (e.pid === server.adminPid || e.kind !== 'LOG' || !during(e.at)) continue;
    // `execute <name>[/<portal>]: ` (the extended protocol; `<unnamed>` for an unnamed statement) or
    // `statement: ` (the simple protocol).
    const m = /^(?:execute ([^:/]*)[^:]*|statement): ([\s\S]*)$/.exec(e.body);
    if (!m) continue;
    const next = entries[i + 1];
    const detail = next && next.pid === e.pid && next.kind === 'DETAIL' ? next.body : '';
    statements.push({
      text: m[2],
      parameters: detail.startsWith('parameters:') ? parseParameters(detail) : [],
      named: m[1] !== undefined && m[1] !== '<unnamed>',
    });
  }
  return statements;
}

/**
 * The statements of one request of `act`: captured again until two captures in a row send the same
 * statements, so that background work falling in the window (a service's periodic flush) is not
 * taken for the route's. Returns the last capture and its answer.
 */
export async function captureStatements<T>(
  server: BenchServer,
  act: () => Promise<T>,
): Promise<{ statements: CapturedStatement[]; answer: T }> {
  let previous: string | undefined;
  for (let attempt = 1; attempt <= 6; attempt += 1) {
    let answer: T | undefined;
    const statements = await captureOnce(server, async () => {
      answer = await act();
    });
    const texts = JSON.stringify(statements.map((s) => s.text));
    if (texts === previous && answer !== undefined) return { statements, answer };
    previous = texts;
  }
  throw new Error('the statements of the route differed in every capture');
}

/**
 * Ends every connection of the service's (and the bare route's) pools: each reports its statistics
 * as it exits. The bench's own sessions stay.
 */
async function flushStatistics(server: BenchServer): Promise<void> {
  const { rows } = await server.admin.query<{ pid: number }>(
    `select pid from pg_stat_activity where backend_type = 'client backend' and pid <> all($1::int[])
       and datname = current_database()`,
    [server.ownPids],
  );
  const pids = rows.map((r) => r.pid);
  await server.admin.query('select pg_terminate_backend(pid) from unnest($1::int[]) as pid', [pids]);
  for (let i = 0; i < 200; i += 1) {
    const left = await server.admin.query('select 1 from pg_stat_activity where pid = any($1::int[])', [
      pids,
    ]);
    if (!left.rows.length) return;
    await sleep(25);
  }
  throw new Error('backends did not exit');
}

async function rowsWritten(server: BenchServer, schema: string): Promise<number> {
  const { rows } = await server.admin.query<{ n: string }>(
    `select coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) as n from pg_stat_user_tables where schemaname = $1`,
    [schema],
  );
  return Number(rows[0].n);
}

export interface Counted {
  statementsPerRequest: number;
  /** Plans made per request (pg_stat_statements `plans`, with `track_planning` on). */
  plansPerRequest: number;
  rowsWrittenPerRequest: number;
  /** pg_stat_statements query ids with their calls (to compare the service's with the bare route's). */
  calls: Record<string, number>;
}

/**
 * Statements (pg_stat_statements calls), plans and rows written over COUNTED_REQUESTS requests of
 * `target`.
 */
export async function countStatements(server: BenchServer, schema: string, target: Target): Promise<Counted> {
  await flushStatistics(server);
  const writtenBefore = await rowsWritten(server, schema);
  await server.admin.query('select pg_stat_statements_reset()');
  const result = await drive(target, 10, { amount: COUNTED_REQUESTS });
  if (result['2xx'] !== COUNTED_REQUESTS)
    throw new Error(`${target.url}: ${result['2xx']} of ${COUNTED_REQUESTS} answered 2xx`);
  const { rows } = await server.admin.query<{ queryid: string; calls: string; plans: string }>(
    `select queryid::text, calls, plans from pg_stat_statements
      where dbid = (select oid from pg_database where datname = current_database())
        and query not ilike '%pg_stat_statements%' and query not ilike '%pg_stat_activity%'
        and query not ilike '%pg_terminate_backend%' and query not ilike '%pg_stat_user_tables%'`,
  );
  await flushStatistics(server);
  const written = (await rowsWritten(server, schema)) - writtenBefore;
  const calls = Object.fromEntries(rows.map((r) => [r.queryid, Number(r.calls)]));
  const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
  return {
    statementsPerRequest: sum(Object.values(calls)) / COUNTED_REQUESTS,
    plansPerRequest: sum(rows.map((r) => Number(r.plans))) / COUNTED_REQUESTS,
    rowsWrittenPerRequest: written / COUNTED_REQUESTS,
    calls,
  };
}
