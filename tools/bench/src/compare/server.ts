// The bench-only PostgreSQL server of the side-by-side mode: the local-server code of @platform/db/local
// on its own data directory (never the shared one), with pg_stat_statements preloaded (counting
// plans too) and its log readable, so the bench can capture and count what each route sends.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureLocalServer, type LocalServer } from '@platform/db/local';
import { Client } from 'pg';
import { childrenOf } from '../lib/machine';
import { freePort } from '../lib/processes';
import { log, onCleanup } from '../lib/run';

export interface BenchServer {
  url: string;
  logFile: string;
  /** A superuser connection of the bench (its own statements are left out of every count). */
  admin: Client;
  adminPid: number;
  /** The bench's own sessions (its admin connection, the local server's membership connection). */
  ownPids: number[];
}

export const BENCH_DATA_DIR = path.join(os.tmpdir(), 'platform-bench-compare-pg');

async function connect(url: string): Promise<{ client: Client; pid: number }> {
  const client = new Client({ connectionString: url });
  await client.connect();
  const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid');
  return { client, pid: rows[0].pid };
}

/**
 * Starts (or joins) the bench-only server in BENCH_DATA_DIR; the first time, it turns on
 * pg_stat_statements (a preloaded library: one restart) and its count of plans (`track_planning`,
 * a reload) in that server's own configuration.
 */
export async function benchServer(): Promise<BenchServer> {
  const port = await freePort();
  const start = () => ensureLocalServer({ dataDir: BENCH_DATA_DIR, port });
  let server: LocalServer = await start();
  let { client } = await connect(server.url);
  const { rows } = await client.query<{ libs: string }>(
    `select current_setting('shared_preload_libraries') as libs`,
  );
  if (!rows[0].libs.includes('pg_stat_statements')) {
    log('bench-only server: preloading pg_stat_statements (one restart)');
    await client.query(`alter system set shared_preload_libraries = 'pg_stat_statements'`);
    await client.end();
    await server.release();
    server = await start();
    client = (await connect(server.url)).client;
  }
  await client.query('create extension if not exists pg_stat_statements');
  const planning = await client.query<{ on: string }>(
    `select current_setting('pg_stat_statements.track_planning') as on`,
  );
  if (planning.rows[0].on !== 'on') {
    await client.query('alter system set pg_stat_statements.track_planning = on');
    await client.query('select pg_reload_conf()');
  }
  await client.end();
  const admin = await connect(server.url);
  const own = await admin.client.query<{ pid: number }>(
    `select pid from pg_stat_activity where backend_type = 'client backend'`,
  );
  onCleanup(async () => {
    await admin.client.end().catch(() => undefined);
    await server.release();
  });
  return {
    url: server.url,
    logFile: path.join(BENCH_DATA_DIR, 'pgdata', 'server.log'),
    admin: admin.client,
    adminPid: admin.pid,
    ownPids: own.rows.map((r) => r.pid),
  };
}

/** A fresh schema `<prefix>_bench_<random>` of the bench-only server, dropped at the end. */
export async function freshSchema(server: BenchServer, prefix: string): Promise<string> {
  const schema = `${prefix}_bench_${randomBytes(4).toString('hex')}`;
  await server.admin.query(`create schema "${schema}"`);
  onCleanup(() => server.admin.query(`drop schema if exists "${schema}" cascade`));
  return schema;
}

/** The bench-only server's postmaster and its children (backends, background workers). */
export function benchServerPids(): number[] {
  const pidFile = path.join(BENCH_DATA_DIR, 'pgdata', 'postmaster.pid');
  const postmaster = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  return [postmaster, ...childrenOf(postmaster)];
}
