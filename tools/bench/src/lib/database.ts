// The throw-away database of a run: a fresh schema of the PostgreSQL DATABASE_URL names, or else of
// the repository's local PostgreSQL server, dropped at the end; and what a report says of it.
import { randomBytes } from 'node:crypto';
import process from 'node:process';
import { localDataDir, openDatabase, type DatabaseConfig } from '@platform/db';
import { ensureLocalServer } from '@platform/db/local';
import { dropSchema } from '@platform/db/testing';
import { sql, type Kysely } from 'kysely';
import { log, onCleanup } from './run';

export interface BenchDatabase {
  /** The `@platform/db` config of the fresh schema (`poolMax` small: the bench's own connection). */
  config: DatabaseConfig & { url: string };
  /** `postgres`: the server DATABASE_URL names; `local`: the repository's local PostgreSQL server. */
  kind: 'postgres' | 'local';
}

/**
 * A database for one run: a fresh schema `<name>_bench_<random>` of the PostgreSQL `databaseUrl`
 * names, or else of the local PostgreSQL server (started or joined, left at the end), created now
 * and dropped at the end.
 */
export async function throwAwayDatabase(
  name: string,
  databaseUrl: string | undefined,
): Promise<BenchDatabase> {
  let url = databaseUrl;
  if (!url) {
    const server = await ensureLocalServer({ dataDir: localDataDir(process.env.DATA_DIR) });
    onCleanup(() => server.release());
    url = server.url;
  }
  const config = { url, schema: `${name}_bench_${randomBytes(4).toString('hex')}`, poolMax: 2 };
  // Created here rather than by the first migration, so a name that exists already fails the run.
  const database = await openDatabase(config);
  try {
    await sql`create schema ${sql.id(config.schema)}`.execute(database.db);
  } finally {
    await database.close();
  }
  onCleanup(async () => {
    await dropSchema(config.url, config.schema);
    log(`dropped schema ${config.schema}`);
  });
  return { config, kind: databaseUrl ? 'postgres' : 'local' };
}

/** The environment of a service (or its command line) on that database: ours, with its DB variables. */
export function databaseEnv(
  config: BenchDatabase['config'],
  extra: NodeJS.ProcessEnv = {},
): NodeJS.ProcessEnv {
  return { ...process.env, DB_SCHEMA: config.schema, DATABASE_URL: config.url, ...extra };
}

/** Opens the throw-away database in this process for `run(db)` (raw SQL: the tables are the service's). */
export async function withDatabase<T>(
  config: BenchDatabase['config'],
  run: (db: Kysely<unknown>) => Promise<T>,
): Promise<T> {
  const database = await openDatabase({ ...config, poolMax: 1 });
  try {
    return await run(database.db);
  } finally {
    await database.close();
  }
}

/**
 * The PostgreSQL backends of the processes started with `PGAPPNAME=<applicationName>` in their
 * environment (pg takes it as the connections' `application_name`), wherever the server runs and
 * whoever else uses it: a function asking for their pids now, on a connection of the bench's own
 * (not among them), open until the clean-up.
 */
export async function backendsNamed(
  config: BenchDatabase['config'],
  applicationName: string,
): Promise<() => Promise<number[]>> {
  const database = await openDatabase({ ...config, poolMax: 1 });
  onCleanup(() => database.close());
  return async () =>
    (
      await sql<{ pid: number }>`select pid from pg_stat_activity
        where application_name = ${applicationName}`.execute(database.db)
    ).rows.map((r) => r.pid);
}

/** What every report says of its database; each benchmark adds its counts. */
export interface DatabaseInfo {
  kind: BenchDatabase['kind'];
  schema: string;
  /** `select version()`. */
  version: string;
}

/**
 * What every report says of its database, once the benchmark has seeded it. PostgreSQL's autovacuum
 * analyzes freshly loaded tables within a minute: they are analyzed now, so the plans do not change
 * halfway through the run.
 */
export async function analyzedDatabaseInfo<DB>(
  db: Kysely<DB>,
  database: BenchDatabase,
): Promise<DatabaseInfo & { analyzed: true }> {
  await sql`analyze`.execute(db);
  const { rows } = await sql<{ version: string }>`select version() as version`.execute(db);
  return { kind: database.kind, schema: database.config.schema, version: rows[0].version, analyzed: true };
}

/** The database section of a report: no data directory, no password. */
export type ReportedDatabase<Info extends DatabaseInfo> = Info & { url: string };

export const reportedDatabase = <Info extends DatabaseInfo>(
  info: Info,
  databaseUrl: string | undefined,
): ReportedDatabase<Info> => ({
  ...info,
  url: databaseUrl ? databaseUrl.replace(/\/\/[^@/]*@/, '//***@') : 'the local PostgreSQL server',
});
