import { sqlState } from './errors';

/** SQLSTATE invalid_schema_name: "schema "<name>" does not exist". */
const INVALID_SCHEMA_NAME = '3F000';
const MISSING_SCHEMA = /^schema "(.*)" does not exist$/;

/** Attempts in all, and the wait before the second (doubled each time after). */
const ATTEMPTS = 4;
const FIRST_BACKOFF_MS = 25;

/**
 * The schema another session dropped under this one's catalog scan, when that is what `error` (or
 * its cause) reports; undefined for any other error, and for the schema `own` itself, whose loss
 * is real.
 */
export function droppedOtherSchema(error: unknown, own: string): string | undefined {
  for (let e: unknown = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (sqlState(e) !== INVALID_SCHEMA_NAME) continue;
    const name = MISSING_SCHEMA.exec(String((e as { message?: unknown }).message))?.[1];
    return name !== undefined && name !== own ? name : undefined;
  }
  return undefined;
}

/**
 * Runs `work` (a Migrator step on the schema `own`) again, a few times, while it fails only
 * because another schema vanished meanwhile. Kysely's Migrator looks for its own tables by
 * introspecting every schema of the database, and that query's catalog scan may still list a
 * schema another session (a parallel test run dropping its fresh schema) has just dropped: checking
 * that schema by name then fails with 3F000. Nothing of `own` changed (a failed run of migrations
 * is rolled back as a whole), and the next scan no longer sees that schema.
 */
export async function retryWhileOtherSchemaDropped<T>(own: string, work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (attempt >= ATTEMPTS || droppedOtherSchema(error, own) === undefined) throw error;
      await new Promise((resolve) => setTimeout(resolve, FIRST_BACKOFF_MS * 2 ** (attempt - 1)));
    }
  }
}
