/** Rows per multi-row statement: far below PostgreSQL's 65,535 bind parameters for any of our tables. */
export const BATCH_SIZE = 500;

/** Runs `statement` on consecutive slices of `rows`, in order, and gathers what each returned. */
export async function inBatches<T, R>(rows: T[], statement: (batch: T[]) => Promise<R[]>): Promise<R[]> {
  const results: R[] = [];
  for (let i = 0; i < rows.length; i += BATCH_SIZE)
    results.push(...(await statement(rows.slice(i, i + BATCH_SIZE))));
  return results;
}
