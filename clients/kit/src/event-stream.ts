import { ApiError, errorBody } from './errors.js';
import { parseServerSentEvents, type ServerSentEvent } from './server-sent-events.js';

/** What `fetch` the stream uses: the global one, or one of the client's (auth, cookies, tests). */
export type Fetch = (input: Request) => Promise<Response>;

export interface EventStreamOptions {
  /** The stream's absolute URL (its own query parameters, e.g. a filter, included). */
  url: string | URL;
  /** Replay what came after this id (the last id a previous stream gave). */
  lastEventId?: string | number;
  /**
   * How the last id goes back to the server on each reconnection: the `last_event_id` query parameter
   * (default: a simple cross-origin request, no CORS preflight) or the `Last-Event-ID` header.
   */
  resumeWith?: 'query' | 'header';
  fetch?: Fetch;
  /** Headers of each (re)connection, asked anew each time (a token that was refreshed). */
  headers?: () => HeadersInit | undefined | Promise<HeadersInit | undefined>;
  /** Ends the stream (the iterator then returns). */
  signal?: AbortSignal;
  /** Wait before reconnecting, until the server says otherwise with `retry:` (default 1000 ms). */
  retryMs?: number;
  /** The longest wait between failed attempts in a row (they double from the retry time; default 30 s). */
  maxRetryMs?: number;
  /** Reconnect when nothing arrived, not even a heartbeat, for this long (default 45 s; 0: never). */
  idleTimeoutMs?: number;
  /** Give up (throw) after this many failed connection attempts in a row (default: never). */
  maxAttempts?: number;
  /** The stream ends after this message, once it has been yielded (e.g. `token_expired`). */
  isFinal?: (message: ServerSentEvent) => boolean;
  /** Told of each reconnection (e.g. to show "reconnecting…"). */
  onReconnect?: (info: { attempt: number; delayMs: number; error?: unknown }) => void;
  /**
   * Told when a connection is open (the service answered the stream), before its first message: the
   * end of "reconnecting…" (what was missed meanwhile follows), or the moment to load what the
   * stream's events will update (nothing written after that load can be missed). `attempt` is 0 for
   * the first connection, then the number of the reconnection (as `onReconnect` counted it).
   */
  onOpen?: (info: { attempt: number; response: Response }) => void;
}

/** Statuses worth another attempt later: the service away, restarting or full. */
const RETRYABLE = new Set([408, 425, 429, 500, 502, 503, 504]);

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** `Retry-After` in milliseconds (seconds or an HTTP date), if the response has one. */
function retryAfterMs(response: Response): number | undefined {
  const value = response.headers.get('retry-after');
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/**
 * A Server-Sent Events stream over `fetch` (Node 20+ and browsers; no EventSource, so headers such as
 * `Authorization` can be sent), as an async iterator of its messages that survives the connection:
 * when the connection drops, the server ends the stream, nothing arrives for `idleTimeoutMs`, or the
 * service answers a retryable status (503 with `Retry-After`, a restart), it reconnects after the
 * server's `retry:` time (doubling while attempts keep failing), sending the last id it saw, so the
 * server replays what was missed: nothing lost, nothing twice. A `reset` message (the id was older
 * than the server keeps) is yielded like any other: reload, and the stream follows on from there.
 * Another error status ends the iterator with an `ApiError` carrying the body. Leaving the loop
 * (`break`) or the signal closes the connection.
 */
export async function* eventStream(options: EventStreamOptions): AsyncGenerator<ServerSentEvent> {
  const fetchStream: Fetch = options.fetch ?? ((request) => fetch(request));
  const maxRetryMs = options.maxRetryMs ?? 30_000;
  const idleTimeoutMs = options.idleTimeoutMs ?? 45_000;
  let retryMs = options.retryMs ?? 1000;
  let lastEventId = options.lastEventId === undefined ? undefined : String(options.lastEventId);
  let failures = 0;
  let attempt = 0;

  while (!options.signal?.aborted) {
    const connection = new AbortController();
    const abort = () => connection.abort();
    options.signal?.addEventListener('abort', abort, { once: true });
    let idle: ReturnType<typeof setTimeout> | undefined;
    const watch = () => {
      if (!idleTimeoutMs) return;
      clearTimeout(idle);
      idle = setTimeout(abort, idleTimeoutMs);
    };
    let waitMs: number | undefined;
    let error: unknown;
    try {
      const url = new URL(options.url);
      const headers = new Headers(await options.headers?.());
      headers.set('accept', 'text/event-stream');
      if (lastEventId !== undefined) {
        if (options.resumeWith === 'header') headers.set('last-event-id', lastEventId);
        else url.searchParams.set('last_event_id', lastEventId);
      }
      watch();
      const response = await fetchStream(new Request(url, { headers, signal: connection.signal }));
      if (!response.ok || !response.body) {
        const body = await errorBody(response);
        if (!RETRYABLE.has(response.status)) throw new ApiError(response.status, body, response);
        error = new ApiError(response.status, body, response);
        waitMs = retryAfterMs(response);
      } else {
        failures = 0;
        watch();
        options.onOpen?.({ attempt, response });
        const body = response.body;
        for await (const message of parseServerSentEvents(body, (ms) => (retryMs = ms))) {
          watch();
          if (message.id !== undefined) lastEventId = message.id;
          yield message;
          if (options.isFinal?.(message)) return;
        }
        // The server ended the stream (it is shutting down, or dropped this client): follow on.
      }
    } catch (caught) {
      if (caught instanceof ApiError) throw caught;
      if (options.signal?.aborted) return;
      error = caught; // the connection dropped, or stayed silent too long
    } finally {
      clearTimeout(idle);
      options.signal?.removeEventListener('abort', abort);
      connection.abort();
    }
    if (error !== undefined) failures++;
    if (options.maxAttempts !== undefined && failures >= options.maxAttempts) throw error;
    const delayMs =
      waitMs ?? Math.min(retryMs * 2 ** Math.max(0, failures - 1), Math.max(retryMs, maxRetryMs));
    options.onReconnect?.({ attempt: ++attempt, delayMs, error });
    await sleep(delayMs, options.signal);
  }
}

/** A stream's message as the service's document types it: its id as a number, its data parsed. */
export interface TypedEvent {
  id?: number;
  event: string;
  data?: unknown;
}

/**
 * The messages of `stream` typed as `E` (the union a document's `text/event-stream` schema gives):
 * `id` a number, `data` parsed JSON.
 */
export async function* typedEvents<E extends TypedEvent>(
  stream: AsyncIterable<ServerSentEvent>,
): AsyncGenerator<E> {
  for await (const message of stream) {
    yield {
      ...(message.id !== undefined && { id: Number(message.id) }),
      event: message.event,
      data: message.data === '' ? undefined : JSON.parse(message.data),
    } as E;
  }
}
