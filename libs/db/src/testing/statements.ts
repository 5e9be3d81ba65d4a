import { Client } from 'pg';

/**
 * Counts what a test's requests cost the database: statements sent (at the driver: a counter around
 * pg's `Client.prototype.query`, since the test PostgreSQL has no pg_stat_statements loaded; every
 * statement any pool of this process sends, through Kysely or not, still runs for real) and rows
 * written, from PostgreSQL's own statistics (`pg_stat_user_tables`: n_tup_ins + n_tup_upd + n_tup_del
 * of one schema). A backend reports its counts at the latest when it exits, so `rowsWritten` first
 * ends the backends this process has used (pg_terminate_backend; the pools replace them).
 */
export interface StatementMeter {
  /** Statements sent since the meter started or was last `reset`. */
  readonly statements: number;
  reset(): void;
  /** Rows inserted, updated or deleted in the schema so far (all time, as PostgreSQL counts them). */
  rowsWritten(): Promise<number>;
  /** Puts pg's `query` back and closes the meter's own connection. */
  stop(): Promise<void>;
}

type CountedClient = Client & { processID?: number };

export async function statementMeter(url: string, schema: string): Promise<StatementMeter> {
  const query = Client.prototype.query;
  let statements = 0;
  /** The backends (server pids) this process's pools have sent statements to. */
  const backends = new Set<number>();
  // A counter, not a mock: the original runs every statement.
  Client.prototype.query = function counted(this: CountedClient, ...args: unknown[]) {
    statements += 1;
    if (this.processID) backends.add(this.processID);
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof Client.prototype.query;
  const observer: CountedClient = new Client({ connectionString: url });
  await observer.connect();
  /** The meter's own statements, past the counter. */
  const ask = (text: string, values: unknown[]) =>
    (query as (text: string, values: unknown[]) => Promise<{ rows: Record<string, unknown>[] }>).call(
      observer,
      text,
      values,
    );

  return {
    get statements() {
      return statements;
    },
    reset() {
      statements = 0;
    },
    async rowsWritten() {
      const pids = [...backends].filter((pid) => pid !== observer.processID);
      backends.clear();
      await ask('select pg_terminate_backend(pid) from unnest($1::int[]) as pid', [pids]);
      for (let i = 0; ; i += 1) {
        const { rows } = await ask('select 1 from pg_stat_activity where pid = any($1::int[])', [pids]);
        if (rows.length === 0) break;
        if (i === 100) throw new Error(`backends ${pids.join(', ')} did not exit`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const { rows } = await ask(
        'select coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) as n from pg_stat_user_tables where schemaname = $1',
        [schema],
      );
      return Number((rows[0] as { n: string }).n);
    },
    async stop() {
      Client.prototype.query = query;
      await observer.end();
    },
  };
}
