import type { CompiledQuery, Kysely, LogEvent } from 'kysely';
import type { Pool, QueryArrayConfig, QueryArrayResult } from 'pg';
import { REMEMBERED_MAX, rowMaker, type RowMaker } from './row-maker';

type Runner = (query: CompiledQuery) => Promise<{ rows: unknown[] }>;
type OnQuery = ((event: LogEvent) => void) | undefined;

/** The pools behind the `Kysely` instances `openDatabase` made (a transaction's is not among them). */
const direct = new WeakMap<object, Runner>();

/**
 * Lets `executeCompiled` run `db`'s compiled queries straight on `pool` (called by `openDatabase`
 * for the instances it makes; not part of the package's API).
 */
export function runDirectly(db: object, pool: Pool, onQuery: OnQuery): void {
  direct.set(db, directRunner(pool, onQuery));
}

/**
 * Runs a query compiled once (the hot reads: a page, a token check; see `prepare`) as
 * `db.executeQuery` would, with the same rows, errors and `onQuery` events, but straight on the
 * pool: Kysely's executor wraps each step in several async calls. Inside a transaction (`db` is
 * not one `openDatabase` made) it is `db.executeQuery`, on the transaction's connection.
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
function directRunner(pool: Pool, onQuery: OnQuery): Runner {
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
          // query's config with Object.defineProperties of its own properties' descriptors, and
          // keeps the prototype, so there is nothing to copy.
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
 * by `rowMaker`) and the row maker of the columns it last returned.
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

const statements = new Map<string, Statement>();

/** A repository's compiled statement is the same string on every call: the lookup hashes nothing new. */
function statementOf(sql: string): Statement {
  let statement = statements.get(sql);
  if (statement === undefined) {
    statement = { config: Object.freeze({ text: sql, rowMode: 'array' as const }) };
    if (statements.size < REMEMBERED_MAX) statements.set(sql, statement);
  }
  return statement;
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
