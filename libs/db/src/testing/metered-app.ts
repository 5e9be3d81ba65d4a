import { statementMeter, type StatementMeter } from './statements';

/** What `withStatementMeter` needs of a test app: where its database is, and how to close it. */
export interface MeterableTestApp {
  config: { database: { url?: string } };
  database: { readonly schema: string };
  close(): Promise<void>;
}

/**
 * A test app with a `statementMeter` on its schema (`meter`); closing it stops the meter, then closes
 * the app. Start it before the test seeds anything, so the meter knows the backends the seed wrote
 * through and `rowsWritten` counts the seed's rows.
 */
export async function withStatementMeter<T extends MeterableTestApp>(
  testApp: T,
): Promise<T & { meter: StatementMeter }> {
  try {
    const { url } = testApp.config.database;
    if (!url) throw new Error('withStatementMeter: the test app names no database URL');
    const meter = await statementMeter(url, testApp.database.schema);
    return {
      ...testApp,
      meter,
      async close() {
        await meter.stop();
        await testApp.close();
      },
    };
  } catch (error) {
    await testApp.close();
    throw error;
  }
}

/** What a run of requests cost the database, as a `StatementMeter` counts it. */
export interface RequestsCost {
  /** Rows written in the schema before the requests, all time (the test's seed among them). */
  writtenBefore: number;
  /** Statements sent per request. */
  perRequest: number;
  /** Rows the requests wrote. */
  written: number;
}

/** Sends `requests` requests one after another (`send(i)`, which checks each answer) and counts their cost. */
export async function costOfRequests(
  meter: StatementMeter,
  requests: number,
  send: (i: number) => Promise<void>,
): Promise<RequestsCost> {
  const writtenBefore = await meter.rowsWritten();
  meter.reset();
  for (let i = 0; i < requests; i += 1) await send(i);
  const perRequest = meter.statements / requests;
  const written = (await meter.rowsWritten()) - writtenBefore;
  return { writtenBefore, perRequest, written };
}
