const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
// admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections, and query_canceled: a
// statement cancelled by `statement_timeout` (or by an operator) got no answer in time, because the
// database is stalled or overloaded; like an outage, nothing the client sent was wrong and a retry
// later may succeed. (A lock wait timeout is 55P03, a conflict, and stays out.)
const SERVER_CODES = new Set(['57P01', '57P02', '57P03', '53300', '57014']);
const DRIVER_MESSAGES = [
  /Connection terminated/i,
  /timeout exceeded when trying to connect/i,
  /Client has encountered a connection error/i,
  /Connection refused/i,
  /database ping timed out/i,
  // pg's client-side `query_timeout`: no answer at all, a frozen or partitioned server.
  /Query read timeout/i,
];

/**
 * True when an error means "the database cannot be reached right now" rather than "this query is
 * wrong": such errors become a 503 and the pool reconnects by itself when the database returns.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (
      typeof code === 'string' &&
      (NETWORK_CODES.has(code) || SERVER_CODES.has(code) || code.startsWith('08'))
    )
      return true;
    if (typeof message === 'string' && DRIVER_MESSAGES.some((re) => re.test(message))) return true;
    if (e instanceof AggregateError && e.errors.some(isDatabaseUnavailable)) return true;
  }
  return false;
}

/** Postgres SQLSTATE of a failed query, when there is one. */
export function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

export const SQLSTATE = {
  uniqueViolation: '23505',
  foreignKeyViolation: '23503',
  checkViolation: '23514',
} as const;
