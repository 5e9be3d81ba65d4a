import { Kysely, PostgresDialect, sql, type CompiledQuery, type LogEvent } from 'kysely';
import { Pool, type QueryArrayConfig, type QueryArrayResult } from 'pg';
import { ensureLocalServer, localDataDir } from './local-server';

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
}

export const DEFAULT_STATEMENT_TIMEOUT_MS = 10_000;
export const QUERY_TIMEOUT_MARGIN_MS = 5_000;

export interface Database<DB> {
  readonly db: Kysely<DB>;
  /** `local`: the repository's own PostgreSQL server (no DATABASE_URL); `postgres`: the one DATABASE_URL names. */
  readonly kind: 'postgres' | 'local';
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
    // Every connection starts in the service's schema (atproto's pattern): no query names it; and
    // with the statement timeout as its default (migrations lift it on their own connection).
    options: `-c search_path=${config.schema} -c statement_timeout=${Math.trunc(statementTimeout)}`,
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
  direct.set(db, directRunner(pool, options.onQuery));
  return wrap(db, kind, config.schema, afterDestroy);
}

type Runner = (query: CompiledQuery) => Promise<{ rows: unknown[] }>;

/** The pools behind the `Kysely` instances `openDatabase` made (a transaction's is not among them). */
const direct = new WeakMap<object, Runner>();

/**
 * What Kysely's executor does for one compiled query (a pooled connection, the query, the
 * connection back, the `onQuery` event), without its layers of async calls around each step: pg's
 * callbacks, one promise.
 */
function directRunner(pool: Pool, onQuery: OpenDatabaseOptions['onQuery']): Runner {
  return (query) =>
    new Promise((resolve, reject) => {
      const started = onQuery ? performance.now() : 0;
      const statement = statementOf(query.sql);
      pool.connect((connectError, client, release) => {
        if (connectError || !client) return reject(connectError);
        let settled = false;
        const done = (error: Error | null, result?: QueryArrayResult) => {
          if (settled) return;
          settled = true;
          // As Kysely releases it: a failed statement (a unique violation) leaves the connection usable.
          release();
          let rows: unknown[] | undefined;
          try {
            if (error) throw error;
            rows = result!.rows.map(rowMakerOf(statement, result!.fields));
          } catch (failure) {
            onQuery?.({
              level: 'error',
              error: failure,
              query,
              queryDurationMillis: performance.now() - started,
            });
            return reject(failure as Error);
          }
          onQuery?.({ level: 'query', query, queryDurationMillis: performance.now() - started });
          resolve({ rows });
        };
        try {
          // An object whose only properties are its prototype's (`statement.config`): pg copies a
          // query's config with Object.defineProperties of its own properties' descriptors (about
          // 1 µs a statement with three), and keeps the prototype.
          (client as unknown as CallbackClient).query(
            Object.create(statement.config) as QueryArrayConfig,
            query.parameters as unknown[],
            done,
          );
        } catch (error) {
          done(error as Error);
        }
      });
    });
}

/**
 * What one statement text needs on every run: its query config (rows as arrays, made into objects
 * by one function per column list, `rowMaker`: pg's own objects are copies of a template filled by
 * column name, which in a process running many statements goes through V8's generic (megamorphic)
 * paths on every value; a page of 100 posts and their replies: 0.83-0.92 -> 0.76-0.81 ms of CPU per
 * request, tools/bench compare) and the row maker of the columns it last returned.
 */
interface Statement {
  readonly config: Readonly<{ text: string; rowMode: 'array' }>;
  names?: readonly string[];
  make?: RowMaker;
}

/** pg's `query(config, values, callback)`, which its types leave out for array rows. */
interface CallbackClient {
  query(
    config: QueryArrayConfig,
    values: unknown[],
    callback: (error: Error | null, result?: QueryArrayResult) => void,
  ): void;
}

type RowMaker = (values: unknown[]) => Record<string, unknown>;
const rowMakers = new Map<string, RowMaker>();
/** Column lists (and statement texts) remembered at most: the services' statements are a fixed set, far below it. */
const ROW_MAKERS_MAX = 1000;
const statements = new Map<string, Statement>();

/** A repository's compiled statement is the same string on every call: the lookup hashes nothing new. */
function statementOf(sql: string): Statement {
  let statement = statements.get(sql);
  if (statement === undefined) {
    statement = { config: Object.freeze({ text: sql, rowMode: 'array' as const }) };
    if (statements.size < ROW_MAKERS_MAX) statements.set(sql, statement);
  }
  return statement;
}

/**
 * `rowMaker` of the columns pg read, kept with the statement and checked name by name (a table
 * altered under `select *` changes them): joining the names into a key and hashing it on every
 * statement cost about 1 µs.
 */
function rowMakerOf(statement: Statement, fields: readonly { name: string }[]): RowMaker {
  const { names, make } = statement;
  if (
    make !== undefined &&
    names!.length === fields.length &&
    names!.every((name, i) => name === fields[i].name)
  )
    return make;
  statement.names = fields.map((field) => field.name);
  return (statement.make = rowMaker(statement.names));
}

/**
 * A function turning one row's values into the object pg would make (the columns in order; of two
 * with one name, the later value in the earlier place), written once per column list as a single
 * object literal, so all its rows share one shape. Names are quoted by JSON.stringify, so a name
 * is never code.
 */
export function rowMaker(names: readonly string[]): RowMaker {
  const key = names.join('\u0000');
  let make = rowMakers.get(key);
  if (make === undefined) {
    // A column called `__proto__` is an own property, as in pg's rows (not the object's prototype).
    const properties = names.map(
      (name, i) => `${name === '__proto__' ? '["__proto__"]' : JSON.stringify(name)}: values[${i}]`,
    );
    make = new Function('values', `return { ${properties.join(', ')} };`) as RowMaker;
    if (rowMakers.size < ROW_MAKERS_MAX) rowMakers.set(key, make);
  }
  return make;
}

/**
 * Runs a query a repository compiled once (the hot reads: a page, a token check) as
 * `db.executeQuery` would, with the same rows, errors and `onQuery` events, but straight on the
 * pool: Kysely's executor costs several microseconds of async calls per statement
 * (tools/bench compare). Inside a transaction (`db` is not one `openDatabase` made) it is
 * `db.executeQuery`, on the transaction's connection.
 */
export function executeCompiled<O>(
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any service's database
  db: Kysely<any>,
  query: CompiledQuery<O>,
): Promise<{ rows: O[] }> {
  const run = direct.get(db);
  return run ? (run(query) as Promise<{ rows: O[] }>) : db.executeQuery(query);
}

function wrap<DB>(
  db: Kysely<DB>,
  kind: Database<DB>['kind'],
  schema: string,
  afterDestroy?: () => Promise<void>,
): Database<DB> {
  let closed: Promise<void> | undefined;
  return {
    db,
    kind,
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
