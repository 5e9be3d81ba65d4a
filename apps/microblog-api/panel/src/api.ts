import { createMicroblogClient, type MicroblogClient } from '@platform/microblog-client';

/** The service that served the panel, through its typed client. */
export function panelClient(): MicroblogClient {
  return createMicroblogClient({
    baseUrl: window.location.origin,
    // Same origin: the browser's client id cookie (HttpOnly) goes with every write, which then counts
    // against that browser's write budget.
    credentials: 'same-origin',
    // Never a list from the browser's cache: Refresh shows what the server has now.
    fetch: (request) => fetch(request, { cache: 'no-store' }),
  });
}

const NETWORK_DETAIL = 'the server could not be reached. Please check your connection and try again.';
const UNEXPECTED_DETAIL = 'the server sent an unexpected answer.';

/** A call that failed, with the words the panel shows after "Could not …: ". */
export class CallFailed extends Error {
  constructor(readonly detail: string) {
    super(detail);
    this.name = 'CallFailed';
  }
}

/**
 * The server's words for an error: an RFC 9457 problem's `detail`, else its `title`, else the
 * status (a proxy's HTML page, an empty body).
 */
function problemDetail(error: unknown, status: number): string {
  if (error && typeof error === 'object') {
    const { detail, title } = error as { detail?: unknown; title?: unknown };
    if (typeof detail === 'string' && detail.trim()) return detail.trim();
    if (typeof title === 'string' && title.trim()) return title.trim();
  }
  return `the server answered with status ${status}.`;
}

/** The data of a client call that succeeded; else a `CallFailed` saying why. */
export async function dataOf<T>(
  call: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<T> {
  let result: Awaited<typeof call>;
  try {
    result = await call;
  } catch (error) {
    // openapi-fetch throws what fetch threw (no answer), or the JSON parser's error (not JSON).
    throw new CallFailed(error instanceof SyntaxError ? UNEXPECTED_DETAIL : NETWORK_DETAIL);
  }
  const { data, error, response } = result;
  if (!response.ok) throw new CallFailed(problemDetail(error, response.status));
  if (data === undefined || data === null) throw new CallFailed(UNEXPECTED_DETAIL);
  return data;
}

/** What follows "Could not …: " for an error of a call. */
export function detailOf(error: unknown): string {
  return error instanceof CallFailed ? error.detail : 'something went wrong. Please try again.';
}
