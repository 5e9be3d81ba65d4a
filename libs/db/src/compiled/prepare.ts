import { sql, type CompiledQuery, type Kysely, type RawBuilder } from 'kysely';
import { executeCompiled, planEachRun } from './execute';

/**
 * The `n`-th parameter (from 1) of a query compiled once by `prepare`: the query's values are all
 * placeholders, so one compiled text serves every call.
 */
export const param = <T>(n: number): RawBuilder<T> => sql.raw<T>(`$${n}`);

/**
 * What `prepare` compiles: a Kysely query builder, or a `sql` template (a query Kysely's builders
 * cannot write) compiled against the database it runs on.
 */
export interface PreparableQuery<O> {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any service's database
  compile(db: Kysely<any>): CompiledQuery<O>;
}

export interface PrepareOptions {
  /**
   * `once` (default): a named statement, parsed and planned once per connection, then usually run on
   * its generic plan. `each-run`: sent unnamed, planned for each run's values, for a statement whose
   * values change its best plan (a page of a user with thousands of followers or one with three).
   */
  plan?: 'once' | 'each-run';
}

/** A prepared query: call it with its arguments for its rows. */
export interface Prepared<O, A extends unknown[]> {
  (...args: A): Promise<O[]>;
  /** The compiled text, as PostgreSQL receives it on every call. */
  readonly sql: string;
}

/**
 * The one way the services run a hot statement (a read, or a write of one statement): a query whose
 * shape never changes, built and compiled by Kysely once (when the repository is made) instead of on
 * every request, then run by `executeCompiled` with `params(...args)` as its values, as a named
 * prepared statement that PostgreSQL parses once per connection (unless `options.plan` says
 * otherwise). Its values must all be `param(n)`
 * placeholders: a literal value would be compiled in as `$k` and clash with them, so it is refused
 * here, at start. `params` may give more values than the query names (one mapping for a family of
 * queries); the extra ones are left out.
 */
export function prepare<O, A extends unknown[]>(
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- runs any service table's query
  db: Kysely<any>,
  query: PreparableQuery<O>,
  params: (...args: A) => unknown[],
  options: PrepareOptions = {},
): Prepared<O, A> {
  const compiled = query.compile(db);
  if (compiled.parameters.length)
    throw new Error(`a prepared query takes its values through param(n) only: ${compiled.sql}`);
  if (options.plan === 'each-run') planEachRun(compiled.sql);
  // A query may leave some of a family's parameters out (the page of all posts has no owner `$3`):
  // PostgreSQL wants exactly the ones it names.
  const count = Math.max(0, ...[...compiled.sql.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
  const { sql: text, query: node, queryId } = compiled;
  const run = async (...args: A): Promise<O[]> => {
    const values = params(...args);
    // Written out, not spread: this runs for every hot read.
    const statement: CompiledQuery<O> = {
      sql: text,
      query: node,
      queryId,
      parameters: values.length === count ? values : values.slice(0, count),
    };
    return (await executeCompiled<O>(db, statement)).rows;
  };
  return Object.assign(run, { sql: text });
}
