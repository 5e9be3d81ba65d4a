import { sql, type Compilable, type CompiledQuery, type Kysely, type RawBuilder } from 'kysely';
import { executeCompiled } from '@platform/db';

/**
 * The `n`-th parameter (from 1) of a query compiled once by `prepare`: the query's values are all
 * placeholders, so one compiled text serves every call.
 */
export const param = <T>(n: number): RawBuilder<T> => sql.raw<T>(`$${n}`);

/**
 * A query whose shape never changes, built and compiled by Kysely once (when the repository is
 * made) instead of on every request; each call sends the compiled text with `params(...args)`.
 * Its values must all be `param(n)` placeholders: a literal value would be compiled in as `$k` and
 * clash with them, so it is refused here, at start. `params` may give more values than the query
 * names (one mapping for a family of queries); the extra ones are left out.
 */
export function prepare<O, A extends unknown[]>(
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- runs any service table's query
  db: Kysely<any>,
  query: Compilable<O>,
  params: (...args: A) => unknown[],
): (...args: A) => Promise<O[]> {
  const compiled = query.compile();
  if (compiled.parameters.length)
    throw new Error(`a prepared query takes its values through param(n) only: ${compiled.sql}`);
  // A query may leave some of a family's parameters out (the page of all posts has no owner `$3`):
  // PostgreSQL wants exactly the ones it names.
  const count = Math.max(0, ...[...compiled.sql.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
  const { sql: text, query: node, queryId } = compiled;
  return async (...args) => {
    const values = params(...args);
    // Written out, not spread: this runs for every hot read.
    const run: CompiledQuery<O> = {
      sql: text,
      query: node,
      queryId,
      parameters: values.length === count ? values : values.slice(0, count),
    };
    return (await executeCompiled<O>(db, run)).rows;
  };
}

/**
 * A timestamptz column as the API writes it (`toISOString()`: UTC, milliseconds, `Z`), formatted by
 * PostgreSQL so that no row is parsed into a Date only to be formatted again.
 */
export const isoTimestamp = (column: string): RawBuilder<string> =>
  sql<string>`to_char(${sql.ref(column)} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
