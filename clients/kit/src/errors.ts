/**
 * A response the helpers cannot go on with (a page that failed, a stream refused): its status and
 * its body as the service's document types it (`E`, the operation's error bodies).
 */
export class ApiError<E = unknown> extends Error {
  override readonly name = 'ApiError';

  constructor(
    readonly status: number,
    readonly body: E,
    readonly response: Response,
  ) {
    super(`${response.url ? `${new URL(response.url).pathname}: ` : ''}HTTP ${status}`);
  }
}

/** The body of an error response: JSON when it says so, else its text (empty: undefined). */
export async function errorBody(response: Response): Promise<unknown> {
  const text = await response.text().catch(() => '');
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
