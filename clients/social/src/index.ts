import createClient, { type Client } from 'openapi-fetch';
import { eventStream, typedEvents, type EventStreamOptions, type Fetch } from '@platform/client-kit';
import type { components, operations, paths } from './schema.js';

export { ApiError } from '@platform/client-kit';
export type { components, operations, paths };

export type User = components['schemas']['User'];
export type Post = components['schemas']['Post'];
export type TokenPair = components['schemas']['Token'];
/** Every error of the service: `{code, message, description}`, with `errors` on validation. */
export type SocialError = components['schemas']['SocialError'];
/** Events of `GET /api/events/posts`: `post`, `post_updated`, `post_deleted`, `reset`, `token_expired`. */
export type PostsEvent = paths['/api/events/posts']['get']['responses'][200]['content']['text/event-stream'];
/** Events of `GET /api/events/feed`: those of the posts stream, and `feed_changed`. */
export type FeedEvent = paths['/api/events/feed']['get']['responses'][200]['content']['text/event-stream'];

export interface SocialClientOptions {
  /** The service's origin, e.g. `http://localhost:5000`. */
  baseUrl: string;
  /** Another fetch (tests, a proxy); the global one by default. */
  fetch?: Fetch;
  /** An access token to start with (one kept from an earlier login). */
  accessToken?: string | null;
  /** Told whenever the access token changes: a login, a refresh, a logout (null). */
  onAccessToken?: (token: string | null) => void;
}

export type StreamOptions = Pick<
  EventStreamOptions,
  'lastEventId' | 'signal' | 'retryMs' | 'idleTimeoutMs' | 'onReconnect' | 'onOpen'
>;

export interface SocialClient extends Client<paths> {
  /** The access token the client sends (`Authorization: Bearer`), null when logged out. */
  readonly accessToken: string | null;
  /**
   * `POST /api/tokens` with HTTP Basic credentials (username or email, and password): on success the
   * client keeps the access token, and the browser keeps the refresh token's HttpOnly cookie.
   */
  login(
    username: string,
    password: string,
  ): Promise<{ data?: TokenPair; error?: SocialError; response: Response }>;
  /**
   * `PUT /api/tokens` with the refresh token's cookie (`credentials: 'include'`): a new pair. The
   * client does it by itself when a call answers 401, then retries that call once.
   */
  refresh(): Promise<boolean>;
  /** `DELETE /api/tokens`: the pair revoked, the cookie cleared, the client logged out. */
  logout(): Promise<{ error?: SocialError; response: Response }>;
  /** Every post as it is written, edited, deleted, resumed from the last id; ends after `token_expired`. */
  postsEvents(options?: StreamOptions): AsyncGenerator<PostsEvent, void>;
  /** The caller's feed as it changes, resumed from the last id; ends after `token_expired`. */
  feedEvents(options?: StreamOptions): AsyncGenerator<FeedEvent, void>;
}

/** `Authorization: Basic` of a username and password, UTF-8 (what browsers and the service do). */
export function basicCredentials(username: string, password: string): string {
  const bytes = new TextEncoder().encode(`${username}:${password}`);
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return `Basic ${btoa(binary)}`;
}

export function createSocialClient(options: SocialClientOptions): SocialClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const inner: Fetch = options.fetch ?? ((request) => fetch(request));
  let token = options.accessToken ?? null;
  const setToken = (next: string | null) => {
    token = next;
    options.onAccessToken?.(next);
  };

  /** The token routes: Basic or the cookie authenticate them, not the bearer (but for a logout). */
  const isTokenRoute = (request: Request) => new URL(request.url).pathname.startsWith('/api/tokens');
  const withBearer = (request: Request) => {
    const wantsBearer =
      !isTokenRoute(request) ||
      (request.method === 'DELETE' && new URL(request.url).pathname === '/api/tokens');
    if (!token || !wantsBearer || request.headers.has('authorization')) return request;
    const headers = new Headers(request.headers);
    headers.set('authorization', `Bearer ${token}`);
    return new Request(request, { headers });
  };

  let refreshing: Promise<boolean> | undefined;
  const refresh = (): Promise<boolean> =>
    (refreshing ??= (async () => {
      try {
        const { data } = await client.PUT('/api/tokens', { body: { access_token: token ?? '' } });
        if (!data) return false;
        setToken(data.access_token);
        return true;
      } finally {
        refreshing = undefined;
      }
    })());

  /**
   * Every call: the bearer token added; a 401 outside the token routes refreshes the pair through the
   * cookie and retries the call once with the new token (the first 401 is returned if that fails).
   */
  const authFetch: Fetch = async (request) => {
    const retry = isTokenRoute(request) ? undefined : request.clone();
    const sentWith = token;
    const response = await inner(withBearer(request));
    if (response.status !== 401 || !retry) return response;
    // Another call may have refreshed meanwhile: then only the retry is needed.
    if (token === sentWith && !(await refresh())) return response;
    await response.body?.cancel();
    return inner(withBearer(retry));
  };

  const client = createClient<paths>({ baseUrl, fetch: authFetch, credentials: 'include' });

  const login: SocialClient['login'] = async (username, password) => {
    const result = await client.POST('/api/tokens', {
      headers: { authorization: basicCredentials(username, password) },
    });
    if (result.data) setToken(result.data.access_token);
    return result;
  };

  const logout: SocialClient['logout'] = async () => {
    const { error, response } = await client.DELETE('/api/tokens');
    if (response.ok) setToken(null);
    return { error, response };
  };

  const stream = <E extends PostsEvent | FeedEvent>(path: string, options: StreamOptions = {}) =>
    typedEvents<E>(
      eventStream({
        ...options,
        url: `${baseUrl}${path}`,
        fetch: authFetch,
        isFinal: (message) => message.event === 'token_expired',
      }),
    );

  // A getter of its own: Object.assign would copy the token's value at this moment.
  Object.defineProperty(client, 'accessToken', { get: () => token, enumerable: true });
  return Object.assign(client as Client<paths> & Pick<SocialClient, 'accessToken'>, {
    login,
    refresh,
    logout,
    postsEvents: (options?: StreamOptions) => stream<PostsEvent>('/api/events/posts', options),
    feedEvents: (options?: StreamOptions) => stream<FeedEvent>('/api/events/feed', options),
  });
}
