import createClient, { type Client } from 'openapi-fetch';
import {
  ApiError,
  eventStream,
  parseLinkHeader,
  typedEvents,
  type EventStreamOptions,
  type Fetch,
} from '@platform/client-kit';
import type { components, operations, paths } from './schema.js';

export { ApiError } from '@platform/client-kit';
export type { components, operations, paths };

type List = paths['/api/microblog']['get'];
/** A post as the list shows it (with its first replies and its reaction counts). */
export type Post = components['schemas']['Post'];
export type Reply = components['schemas']['Reply'];
/** The list's query: `limit` (1..500), `before` (a post id), `topic`. */
export type ListQuery = NonNullable<List['parameters']['query']>;
export type Topic = NonNullable<ListQuery['topic']>;
/** Every error of the service: an RFC 9457 problem details object. */
export type Problem = components['schemas']['ProblemDetails'];
/** An event of the live stream: `post`, `reply`, `reaction` or `reset` (reload, then follow on). */
export type MicroblogEvent =
  paths['/api/microblog/events']['get']['responses'][200]['content']['text/event-stream'];

export interface MicroblogClientOptions {
  /** The service's origin, e.g. `http://localhost:8887`. */
  baseUrl: string;
  /** Another fetch (tests, a proxy); the global one by default. */
  fetch?: Fetch;
  /** Headers of every request. */
  headers?: Record<string, string>;
  /**
   * `include` on the panel's own origin sends the browser's client id cookie, whose writes count
   * against the per-browser budget instead of the stricter one for scripts.
   */
  credentials?: RequestCredentials;
}

export interface EventsOptions extends Pick<
  EventStreamOptions,
  'lastEventId' | 'signal' | 'retryMs' | 'idleTimeoutMs' | 'onReconnect' | 'onOpen'
> {
  /** Only the posts of this topic, their replies and reactions. */
  topic?: Topic;
}

/** One page of the list, and the query of the page after it (none on the last page). */
export interface Page {
  posts: Post[];
  /** From the `Link: <…>; rel="next"` header: pass it to `page()` for the older posts. */
  next?: ListQuery;
}

/** The typed client: openapi-fetch's `GET`/`POST`… over the document's paths, and the helpers. */
export interface MicroblogClient extends Client<paths> {
  /**
   * One page of the list, newest first, with the query of the next one (a "Load older posts" button
   * shows while there is one). A failed page throws an `ApiError` carrying the problem details.
   */
  page(query?: ListQuery, options?: { signal?: AbortSignal }): Promise<Page>;
  /**
   * The list page by page, newest first, following the `Link: <…>; rel="next"` header until there is
   * none (each page is one request; stop early with `break`). A failed page throws an `ApiError`
   * carrying the problem details.
   */
  pages(query?: ListQuery, options?: { signal?: AbortSignal }): AsyncGenerator<Post[], void>;
  /** The same, post by post. */
  posts(query?: ListQuery, options?: { signal?: AbortSignal }): AsyncGenerator<Post, void>;
  /**
   * The live stream (`GET /api/microblog/events`) as typed events, resuming from the last id after
   * a drop (nothing missed, nothing twice); a `reset` event means: reload the list, then follow on.
   */
  events(options?: EventsOptions): AsyncGenerator<MicroblogEvent, void>;
}

/** A `next` link's query, as the list's query type (numbers as numbers). */
function queryOf(url: URL): ListQuery {
  const query: Record<string, string | number> = {};
  for (const [key, value] of url.searchParams) query[key] = /^\d+$/.test(value) ? Number(value) : value;
  return query as ListQuery;
}

export function createMicroblogClient(options: MicroblogClientOptions): MicroblogClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const fetchRequest: Fetch = options.fetch ?? ((request) => fetch(request));
  const client = createClient<paths>({
    baseUrl,
    fetch: fetchRequest,
    headers: options.headers,
    credentials: options.credentials,
  });

  async function page(query: ListQuery = {}, { signal }: { signal?: AbortSignal } = {}): Promise<Page> {
    const { data, error, response } = await client.GET('/api/microblog', { params: { query }, signal });
    if (data === undefined) throw new ApiError<Problem | undefined>(response.status, error, response);
    const link = parseLinkHeader(
      response.headers.get('link'),
      response.url || `${baseUrl}/api/microblog`,
    ).next;
    return { posts: data, ...(link && { next: queryOf(new URL(link)) }) };
  }

  async function* pages(
    query: ListQuery = {},
    options: { signal?: AbortSignal } = {},
  ): AsyncGenerator<Post[], void> {
    let next: ListQuery | undefined = query;
    while (next) {
      const current: Page = await page(next, options);
      yield current.posts;
      next = current.next;
    }
  }

  async function* posts(
    query: ListQuery = {},
    options: { signal?: AbortSignal } = {},
  ): AsyncGenerator<Post, void> {
    for await (const page of pages(query, options)) yield* page;
  }

  function events({ topic, ...stream }: EventsOptions = {}) {
    const url = new URL(`${baseUrl}/api/microblog/events`);
    if (topic) url.searchParams.set('topic', topic);
    return typedEvents<MicroblogEvent>(
      eventStream({ ...stream, url, fetch: fetchRequest, headers: () => options.headers }),
    );
  }

  return Object.assign(client, { page, pages, posts, events });
}
