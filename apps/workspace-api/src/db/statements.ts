import type { Insertable, Kysely, Selectable, SelectType } from 'kysely';
import { inBatches } from './batches';
import type { WorkspaceDatabase } from './schema';

type Table = keyof WorkspaceDatabase & string;
type Column<T extends Table> = keyof WorkspaceDatabase[T] & string;
/**
 * The database as these helpers see it inside: any table, any column. Their signatures keep the
 * real tables and columns (Kysely cannot check a query over a table that is a type parameter).
 */
type AnyTables = Kysely<Record<string, Record<string, unknown>>>;

/**
 * Deletes the rows of `table` whose columns equal `match`, in one statement (in a transaction when
 * `executor` is one); whether there was any.
 */
export async function deleteWhere<T extends Table>(
  executor: Kysely<WorkspaceDatabase>,
  table: T,
  match: Partial<Selectable<WorkspaceDatabase[T]>>,
): Promise<boolean> {
  const { numDeletedRows } = await (executor as unknown as AnyTables)
    .deleteFrom(table as string)
    .where((eb) => eb.and(match))
    .executeTakeFirstOrThrow();
  return numDeletedRows > 0n;
}

/**
 * Inserts `rows` into `table` in batches (see `inBatches`), leaving alone the rows that conflict on
 * the `unique` columns; answers `returning` of the rows actually inserted.
 */
export async function insertMissing<T extends Table, C extends Column<T>>(
  db: Kysely<WorkspaceDatabase>,
  table: T,
  rows: Insertable<WorkspaceDatabase[T]>[],
  unique: Column<T>[],
  returning: C,
): Promise<SelectType<WorkspaceDatabase[T][C]>[]> {
  const inserted = await inBatches(rows, (batch) =>
    (db as unknown as AnyTables)
      .insertInto(table as string)
      .values(batch)
      .onConflict((oc) => oc.columns(unique).doNothing())
      .returning(returning as string)
      .execute(),
  );
  return inserted.map((row) => row[returning] as SelectType<WorkspaceDatabase[T][C]>);
}
