/** One row's values (pg's array row mode) made into the object pg would make. */
export type RowMaker = (values: unknown[]) => Record<string, unknown>;

/** Column lists (and statement texts, see execute.ts) remembered at most: the services' statements are a fixed set, far below it. */
export const REMEMBERED_MAX = 1000;

const rowMakers = new Map<string, RowMaker>();

/**
 * A function turning one row's values into the object pg would make (the columns in order; of two
 * with one name, the later value in the earlier place), written once per column list as a single
 * object literal, so all its rows share one shape: pg's own objects are copies of a template filled
 * by column name, which in a process running many statements goes through V8's generic
 * (megamorphic) paths on every value. Names are quoted by JSON.stringify, so a name is never code.
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
    if (rowMakers.size < REMEMBERED_MAX) rowMakers.set(key, make);
  }
  return make;
}
