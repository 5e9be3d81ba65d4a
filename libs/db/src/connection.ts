import { Kysely, PostgresDialect, sql, type LogEvent } from 'kysely';
import { Pool } from 'pg';
import { runDirectly } from './compiled/execute';
import { localDataDir } from './local-settings';

export interface DatabaseConfig {
  /** A PostgreSQL connection string; when absent the local PostgreSQL server of `dataDir` is used. */
  url?: string;
  /** The local server's data directory (`DATA_DIR`: empty = `<root>/.data/postgres`, relative = from the root). Ignored with `url`. */
  dataDir?: string;
  /** The local server's port when this process starts it (`LOCAL_PG_PORT`). Ignored with `url`. */
  localPort?: number;
  /** The Postgres schema the service owns; queries and migrations never name it. */
  schema: string;
  /** Pool size. */
  poolMax?: number;
  /** How long a request waits for a connection before the database counts as unavailable. */
  connectTimeoutMs?: number;
  /**
   * The server cancels a statement running longer (`statement_timeout`, SQLSTATE 57014, a 503);
   * 0 = no limit. Default `DEFAULT_STATEMENT_TIMEOUT_MS`. Migrations run without it.
   */
  statementTimeoutMs?: number;
  /**
   * The client gives up on a query unanswered this long (pg's `query_timeout`, "Query read timeout",
   * a 503): what ends a query when the server is frozen or partitioned away and cannot cancel it
   * itself; 0 = no limit. Default: the statement timeout plus `QUERY_TIMEOUT_MARGIN_MS`, so the
   * server's cancellation normally comes first (0 when the statement timeout is 0).
   */
  queryTimeoutMs?: number;
  /**
   * The hot path's statements go as named prepared statements, parsed once per connection
   * (`DB_PREPARED_STATEMENTS`, default true); false for a pooler in transaction mode that cannot
   * keep them (PgBouncer before 1.21, or without `max_prepared_statements`).
   */
  preparedStatements?: boolean;
}

export const DEFAULT_STATEMENT_TIMEOUT_MS = 10_000;
export const QUERY_TIMEOUT_MARGIN_MS = 5_000;

export interface Database<DB> {
  readonly db: Kysely<DB>;
  /** `local`: the repository's own PostgreSQL server (no DATABASE_URL); `postgres`: the one DATABASE_URL names. */
  readonly kind: 'postgres' | 'local';
  readonly schema: string;
  /**
   * The connection string the pool uses (the local server's when no URL was given): what a
   * dedicated connection of the same service (the event listener) opens by default.
   */
  readonly url: string;
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

/**
 * Opens a pool on the service's schema: on the PostgreSQL `url` names, or else on the local server
 * (found running or started, see local-server.ts). Both are the same code path from here on.
 */
export async function openDatabase<DB>(
  config: DatabaseConfig,
  options: OpenDatabaseOptions = {},
): Promise<Database<DB>> {
  assertSchemaName(config.schema);
  if (config.url) return openPool<DB>(config.url, 'postgres', config, options);
  // The development path only, loaded on demand: production code never imports the manager of a
  // server whose binaries (a development dependency) an image does not have. Named by the package's
  // own entry, not a relative path: Node resolves it to dist/, Jest, tsx and tsc to src/ (the
  // `@platform/source` condition), where a relative `./local-server.js` names a file only dist/ has.
  // eslint-disable-next-line @nx/enforce-module-boundaries -- the self-reference above, on purpose
  const { ensureLocalServer } = await import('@platform/db/local');
  const server = await ensureLocalServer({ dataDir: localDataDir(config.dataDir), port: config.localPort });
  return openPool<DB>(server.url, 'local', config, options, async () => {
    await server.release();
  });
}

function openPool<DB>(
  url: string,
  kind: Database<DB>['kind'],
  config: DatabaseConfig,
  options: OpenDatabaseOptions,
  afterDestroy?: () => Promise<void>,
): Database<DB> {
  const statementTimeout = config.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
  const queryTimeout =
    config.queryTimeoutMs ?? (statementTimeout > 0 ? statementTimeout + QUERY_TIMEOUT_MARGIN_MS : 0);
  const pool = new Pool({
    connectionString: url,
    max: config.poolMax ?? 10,
    connectionTimeoutMillis: config.connectTimeoutMs ?? 3000,
    idleTimeoutMillis: 30_000,
    // Every connection starts in the service's schema (atproto's pattern): no query names it; with
    // the statement timeout as its default (migrations lift it on their own connection); and without
    // JIT compilation, which pays off for long analytic queries, never for a service's small ones:
    // a page whose plan is estimated costly (a generic plan with an unknown offset, a deep feed)
    // would spend some 250 ms compiling code for a query that runs in one.
    options: `-c search_path=${config.schema} -c statement_timeout=${Math.trunc(statementTimeout)} -c jit=off`,
    // pg's option is `false`, not 0, for "no limit".
    query_timeout: queryTimeout > 0 ? queryTimeout : undefined,
  });
  // pg emits a client's network error as an 'error' event: the pool listens while the client is
  // idle, nobody while it is checked out, and an unheard 'error' event crashes the process. The
  // failed query itself still rejects, and the pool drops the broken client on release.
  const onError = (error: Error) => options.onConnectionError?.(error);
  pool.on('error', onError);
  pool.on('connect', (client) => client.on('error', onError));
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }), log: options.onQuery });
  // The hot reads' path (`executeCompiled`) runs this instance's compiled queries on the pool itself.
  runDirectly(db, pool, options.onQuery, { named: config.preparedStatements ?? true });
  return wrap(db, kind, url, config.schema, afterDestroy);
}

function wrap<DB>(
  db: Kysely<DB>,
  kind: Database<DB>['kind'],
  url: string,
  schema: string,
  afterDestroy?: () => Promise<void>,
): Database<DB> {
  let closed: Promise<void> | undefined;
  return {
    db,
    kind,
    url,
    schema,
    async ping(timeoutMs = 2000) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(Object.assign(new Error('database ping timed out'), { code: 'ETIMEDOUT' })),
          timeoutMs,
        );
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
