/** Nothing stored: what a storm test compares before and after. */
import type { Database } from '@platform/db';

/** Rows of every table of the service's schema (its migration bookkeeping aside), by table name. */
export async function tableRowCounts<DB>(database: Database<DB>): Promise<Record<string, number>> {
  const db = database.db as unknown as {
    introspection: { getTables(): Promise<{ name: string; schema?: string }[]> };
    selectFrom(table: string): {
      select(f: (eb: { fn: { countAll(): { as(n: string): unknown } } }) => unknown[]): {
        executeTakeFirstOrThrow(): Promise<{ n: string | number | bigint }>;
      };
    };
  };
  const counts: Record<string, number> = {};
  for (const { name, schema } of await db.introspection.getTables()) {
    // The introspection lists every schema the connection can see; the service's is on its search_path.
    if (schema !== database.schema) continue;
    const row = await db
      .selectFrom(name)
      .select((eb) => [eb.fn.countAll().as('n')])
      .executeTakeFirstOrThrow();
    counts[name] = Number(row.n);
  }
  return counts;
}
