import { sql, type RawBuilder } from 'kysely';

/**
 * A timestamptz column as the services write it on the wire (`Date.prototype.toISOString()`: UTC,
 * milliseconds, `Z`, e.g. `2026-11-22T09:15:00.123Z`), formatted by PostgreSQL so that no row is
 * parsed into a Date only to be formatted again.
 */
export const isoTimestamp = (column: string): RawBuilder<string> =>
  sql<string>`to_char(${sql.ref(column)} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
