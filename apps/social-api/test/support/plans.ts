import { CompiledQuery, type Kysely } from 'kysely';

/** A node of a JSON query plan (EXPLAIN (ANALYZE, FORMAT JSON)), with what the tests read of it. */
export type PlanNode = {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Plans?: PlanNode[];
};

/** A plan node and every node below it. */
export const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];

/** The root of EXPLAIN ANALYZE's plan of a statement the app ran, with its parameters. */
export async function explainAnalyze(
  db: Kysely<any>,
  query: CompiledQuery,
  options: { buffers?: boolean } = {},
): Promise<PlanNode> {
  const { rows } = await db.executeQuery<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(
    CompiledQuery.raw(`explain (analyze${options.buffers ? ', buffers' : ''}, format json) ${query.sql}`, [
      ...query.parameters,
    ]),
  );
  return rows[0]['QUERY PLAN'][0].Plan;
}
