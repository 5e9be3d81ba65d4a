import { mkdirSync } from 'node:fs';
import { Kysely, PostgresDialect, sql, type LogEvent } from 'kysely';
import { Pool } from 'pg';
import { PGliteDialect } from 'kysely-pglite-dialect';

export interface DatabaseConfig {
  /** A PostgreSQL connection string; when absent an embedded PGlite database is used. */
  url?: string;
  /** Embedded database directory; absent means an in-memory database (tests). Ignored with `url`. */
  dataDir?: string;
  /** The Postgres schema the service owns; queries and migrations never name it. */
  schema: string;
  /** Pool size for PostgreSQL. */
  poolMax?: number;
  /** How long a request waits for a PostgreSQL connection before the database counts as unavailable. */
  connectTimeoutMs?: number;
  /** Embedded only: how often planner statistics are refreshed (PGlite has no autovacuum). */
  analyzeEveryMs?: number;
}

export interface Database<DB> {
  readonly db: Kysely<DB>;
  readonly kind: 'postgres' | 'embedded';
  readonly schema: string;
  /** Resolves when the database answers a trivial query, rejects otherwise. */
  ping(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  /** Called for every query (Kysely's log hook): tests count queries with it, apps may log slow ones. */
  onQuery?: (event: LogEvent) => void;
  /** Called when an idle pooled connection fails (the pool replaces it by itself). */
  onConnectionError?: (error: Error) => void;
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export function assertSchemaName(schema: string): void {
  if (!SCHEMA_NAME.test(schema)) throw new Error(`invalid schema name: ${JSON.stringify(schema)}`);
}

export async function openDatabase<DB>(config: DatabaseConfig, options: OpenDatabaseOptions = {}): Promise<Database<DB>> {
  assertSchemaName(config.schema);
  return config.url ? openPostgres<DB>(config, options) : openEmbedded<DB>(config, options);
}

function openPostgres<DB>(config: DatabaseConfig, options: OpenDatabaseOptions): Database<DB> {
  const pool = new Pool({
    connectionString: config.url,
    max: config.poolMax ?? 10,
    connectionTimeoutMillis: config.connectTimeoutMs ?? 3000,
    idleTimeoutMillis: 30_000,
    // Every connection starts in the service's schema (atproto's pattern): no query names it.
    options: `-c search_path=${config.schema}`,
  });
  // pg emits a client's network error as an 'error' event: the pool listens while the client is
  // idle, nobody while it is checked out, and an unheard 'error' event crashes the process. The
  // failed query itself still rejects, and the pool drops the broken client on release.
  const onError = (error: Error) => options.onConnectionError?.(error);
  pool.on('error', onError);
  pool.on('connect', (client) => client.on('error', onError));
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }), log: options.onQuery });
  return wrap(db, 'postgres', config.schema);
}

async function openEmbedded<DB>(config: DatabaseConfig, options: OpenDatabaseOptions): Promise<Database<DB>> {
  // PGlite is ESM-first and loads its WebAssembly lazily; a dynamic import keeps start-up cheap
  // for services that run on PostgreSQL.
  const { PGlite } = await import('@electric-sql/pglite');
  if (config.dataDir) mkdirSync(config.dataDir, { recursive: true });
  const pglite = await PGlite.create(config.dataDir);
  // One connection for the database's life, so a session setting is enough.
  await pglite.exec(`CREATE SCHEMA IF NOT EXISTS "${config.schema}"; SET search_path TO "${config.schema}";`);
  const db = new Kysely<DB>({ dialect: new PGliteDialect(pglite as never), log: options.onQuery });
  // PGlite has no autovacuum: without statistics the planner picks scan-and-sort plans that grow
  // with the tables. Refresh them now (data from earlier runs) and every few minutes, through
  // Kysely so the statement waits its turn on the single connection.
  const analyze = () => sql`analyze`.execute(db).catch(() => undefined);
  await analyze();
  const timer = setInterval(analyze, config.analyzeEveryMs ?? 5 * 60_000).unref();
  // Kysely's destroy already closes PGlite through the dialect; close again only if it did not.
  return wrap(db, 'embedded', config.schema, async () => {
    clearInterval(timer);
    if (!pglite.closed) await pglite.close();
  });
}

function wrap<DB>(db: Kysely<DB>, kind: Database<DB>['kind'], schema: string, afterDestroy?: () => Promise<void>): Database<DB> {
  let closed: Promise<void> | undefined;
  return {
    db,
    kind,
    schema,
    async ping(timeoutMs = 2000) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(Object.assign(new Error('database ping timed out'), { code: 'ETIMEDOUT' })), timeoutMs);
      });
      try {
        await Promise.race([sql`select 1`.execute(db), timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
    close() {
      closed ??= (async () => {
        await db.destroy();
        await afterDestroy?.();
      })();
      return closed;
    },
  };
}
