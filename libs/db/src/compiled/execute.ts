import type { CompiledQuery, Kysely, LogEvent } from 'kysely';
import type { Pool, QueryArrayConfig, QueryArrayResult } from 'pg';
import { REMEMBERED_MAX, rowMaker, type RowMaker } from './row-maker';

type Runner = (query: CompiledQuery) => Promise<{ rows: unknown[] }>;
type OnQuery = ((event: LogEvent) => void) | undefined;

/** The pools behind the `Kysely` instances `openDatabase` made (a transaction's is not among them). */
const direct = new WeakMap<object, Runner>();

/**
 * Texts planned for each run's values (see `prepare`'s `plan: 'each-run'`): sent unnamed, so
 * PostgreSQL plans them as it plans any unnamed statement, for the values given. A named statement is
 * parsed once per connection and, after five runs, kept on its generic plan when that looks no
 * costlier than the custom ones (PostgreSQL's `plan_cache_mode = auto`): right for a statement whose
 * best plan does not depend on its values, wrong for one whose values change the work by orders of
 * magnitude (a page of a user followed by thousands among users followed by a few), whose generic
 * plan can look as cheap and run far slower.
 */
const plannedEachRun = new Set<string>();

/** Marks a statement text as planned for each run's values (sent unnamed). */
export function planEachRun(sql: string): void {
  plannedEachRun.add(sql);
  const known = statements.get(sql);
  if (known) statements.set(sql, { ...known, named: known.unnamed });
}

export interface RunDirectlyOptions {
  /**
   * Send the statements as named prepared statements, parsed once per connection (default true);
   * false: unnamed, parsed on every run (a pooler that cannot keep them, see the README).
   */
  named?: boolean;
}

/**
 * Lets `executeCompiled` run `db`'s compiled queries straight on `pool` (called by `openDatabase`
 * for the instances it makes; not part of the package's API).
 */
export function runDirectly(
  db: object,
  pool: Pool,
  onQuery: OnQuery,
  { named = true }: RunDirectlyOptions = {},
): void {
  direct.set(db, directRunner(pool, onQuery, named));
}

/**
 * Runs a query compiled once (the hot reads: a page, a token check; see `prepare`) as
 * `db.executeQuery` would, with the same rows, errors and `onQuery` events, but straight on the
 * pool: Kysely's executor wraps each step in several async calls; and as a named statement, parsed
 * once per connection. Inside a transaction (`db` is not one `openDatabase` made) it is
 * `db.executeQuery`, on the transaction's connection and unnamed: Kysely's transaction keeps its
 * pg client to itself (its driver sends the text alone), so a hot write is one statement instead.
 */
export function executeCompiled<O>(
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any service's database
  db: Kysely<any>,
  query: CompiledQuery<O>,
): Promise<{ rows: O[] }> {
  const run = direct.get(db);
  return run ? (run(query) as Promise<{ rows: O[] }>) : db.executeQuery(query);
}

/**
 * What Kysely's executor does for one compiled query (a pooled connection, the query, the
 * connection back, the `onQuery` event), without its layers of async calls around each step: pg's
 * callbacks, one promise.
 */
function directRunner(pool: Pool, onQuery: OnQuery, named: boolean): Runner {
  return (query) =>
    new Promise((resolve, reject) => {
      const started = onQuery ? performance.now() : 0;
      const statement = statementOf(query.sql);
      const config = named ? statement.named : statement.unnamed;
      /** Connections left to discard for a stale statement (see `isStaleStatement`). */
      let discards: number | undefined;
      const run = () =>
        pool.connect((connectError, client, release) => {
          if (connectError || !client) return reject(connectError);
          let settled = false;
          const done = (error: Error | null, result?: QueryArrayResult) => {
            if (settled) return;
            settled = true;
            if (error && config.name !== undefined && isStaleStatement(error)) {
              // This connection's statement of that name is stale (its table changed under it). The
              // connection goes (pg ends a connection released with an error) and the statement
              // runs again on another; each connection there was when it failed may hold it stale.
              discards ??= pool.totalCount;
              if (discards-- > 0) {
                release(error);
                return run();
              }
            }
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
            // An object whose only properties are its prototype's (`config`): pg copies a query's
            // config with Object.defineProperties of its own properties' descriptors, and keeps the
            // prototype, so there is nothing to copy.
            (client as unknown as CallbackClient).query(
              Object.create(config) as QueryArrayConfig,
              query.parameters as unknown[],
              done,
            );
          } catch (error) {
            done(error as Error);
          }
        });
      run();
    });
}

type Config = Readonly<{ text: string; rowMode: 'array'; name?: string }>;

/**
 * What one statement text needs on every run: its query configs (rows as arrays, made into objects
 * by `rowMaker`), named and not, and the row maker of the columns it last returned.
 */
interface Statement {
  readonly named: Config;
  readonly unnamed: Config;
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

const statements = new Map<string, Statement>();

/**
 * A repository's compiled statement is the same string on every call: the lookup hashes nothing new.
 * A remembered text gets a name of its own, never another text's (pg then sends Parse once per
 * connection, and only Bind and Execute after that); one past the remembered set stays unnamed.
 */
function statementOf(sql: string): Statement {
  let statement = statements.get(sql);
  if (statement === undefined) {
    const unnamed = Object.freeze({ text: sql, rowMode: 'array' as const });
    if (statements.size < REMEMBERED_MAX) {
      // A short name (PostgreSQL keeps 63 bytes of one), unique in this process: the n-th text.
      const named = plannedEachRun.has(sql)
        ? unnamed
        : Object.freeze({ ...unnamed, name: `compiled_${statements.size + 1}` });
      statements.set(sql, (statement = { named, unnamed }));
    } else statement = { named: unnamed, unnamed };
  }
  return statement;
}

/**
 * PostgreSQL refuses to run a prepared statement whose result columns changed since it was parsed
 * (a table altered under `select *`: SQLSTATE 0A000), on every run, until the statement is dropped.
 */
function isStaleStatement(error: Error): boolean {
  return (
    (error as { code?: string }).code === '0A000' &&
    /cached plan must not change result type/.test(error.message)
  );
}

/**
 * `rowMaker` of the columns pg read, kept with the statement and checked name by name (a table
 * altered under `select *` changes them): joining the names into a key and hashing it on every
 * statement would cost more than the check.
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
