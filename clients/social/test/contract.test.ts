import { startTestServer, type TestServer } from '@platform/social-api/test-support';
import { proveStreamMessage } from '@platform/testing';
import {
  committedDocument,
  cookieJar,
  documentProvenByClient,
  recorder,
  type Recorder,
} from '@platform/client-kit/testing';
import {
  createSocialClient,
  type FeedEvent,
  type PostsEvent,
  type SocialClient,
  type SocialError,
} from '../src/index.js';

/**
 * The client against the real service on a real port: every operation of the committed document is
 * called through it (the last tests check), errors come back typed from the document, a 401 is
 * refreshed through the refresh cookie and the call retried, and the streams resume from their last
 * id after the server drops them and end after `token_expired`.
 */
const document = committedDocument('social-api');

let server: TestServer;
let calls: Recorder;

/** A client as a browser tab would be: its own cookies (Node's fetch keeps none), every call recorded. */
function browser(): { client: SocialClient; jar: ReturnType<typeof cookieJar> } {
  const jar = cookieJar(calls.fetch);
  return { client: createSocialClient({ baseUrl: server.baseUrl, fetch: jar.fetch }), jar };
}

let users = 0;
/** A new user, registered and logged in through the client. */
async function signedUp(): Promise<{
  client: SocialClient;
  jar: ReturnType<typeof cookieJar>;
  id: number;
  username: string;
}> {
  const tab = browser();
  const username = `reader${++users}`;
  const created = await tab.client.POST('/api/users', {
    body: { username, email: `${username}@example.com`, password: 'password' },
  });
  expect(created.response.status).toBe(201);
  const login = await tab.client.login(username, 'password');
  expect(login.response.status).toBe(200);
  return { ...tab, id: created.data!.id, username };
}

beforeAll(async () => {
  // Streams check their token often, and come back quickly when dropped.
  server = await startTestServer({ EVENTS_TOKEN_CHECK_MS: '100', EVENTS_RETRY_MS: '300' });
  // Each message a stream gives the client is proven against the document, as the services' tests' are.
  calls = recorder(document, undefined, proveStreamMessage);
});
afterAll(() => server?.close());

/** How many times the stream `operation` has opened (answered 200) so far. */
const opens = (operation: string) =>
  calls.calls.filter((c) => c.operation === operation && c.status === 200).length;
/** Waits until the stream has opened once more than `before` times: it then receives every later event. */
async function opened(operation: string, before: number): Promise<void> {
  for (let i = 0; i < 1000 && opens(operation) <= before; i++)
    await new Promise((resolve) => setTimeout(resolve, 10));
  expect(opens(operation)).toBeGreaterThan(before);
}

const minutes = (n: number) => n * 60_000;

async function take<E>(events: AsyncGenerator<E, void>, n: number): Promise<E[]> {
  const out: E[] = [];
  while (out.length < n) {
    const { value, done } = await events.next();
    if (done) break;
    out.push(value);
  }
  return out;
}
const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('operations for operators and the docs', () => {
  test('health, readiness, metrics, the redirect to the docs, the document', async () => {
    const { client } = browser();
    expect((await client.GET('/healthz')).response.status).toBe(200);
    expect((await client.GET('/readyz')).response.status).toBe(200);
    expect((await client.GET('/metrics', { parseAs: 'text' })).data).toMatch(/^# HELP /m);
    const root = await client.GET('/', { redirect: 'manual', parseAs: 'text' });
    expect([root.response.status, root.response.headers.get('location')]).toEqual([302, '/docs']);
    expect((await client.GET('/apispec.json')).data).toMatchObject({ openapi: '3.0.3' });
  });
});

describe('login, refresh on 401 through the cookie, logout', () => {
  test('a wrong password is a typed 401', async () => {
    const { client, username } = await signedUp();
    const { error, response } = await client.login(username, 'wrong');
    const typed: SocialError | undefined = error;
    expect(response.status).toBe(401);
    expect(typed).toMatchObject({ code: 401, message: 'Unauthorized' });
  });

  test('an expired access token is refreshed through the refresh cookie and the call retried once', async () => {
    const { client, jar, username } = await signedUp();
    expect(jar.cookies.has('refresh_token')).toBe(true);
    const first = client.accessToken;
    server.clock.advance(minutes(16)); // past ACCESS_TOKEN_MINUTES (15)
    const before = calls.calls.length;
    const me = await client.GET('/api/me');
    expect(me.data?.username).toBe(username);
    expect(client.accessToken).not.toBe(first);
    // The call, its 401, the refresh (PUT /api/tokens with the cookie), the call again.
    expect(calls.calls.slice(before).map((c) => `${c.operation} ${c.status}`)).toEqual([
      'GET /api/me 401',
      'PUT /api/tokens 200',
      'GET /api/me 200',
    ]);
  });

  test('without the cookie the refresh fails and the 401 comes back, typed', async () => {
    const { client, jar } = await signedUp();
    jar.cookies.clear();
    server.clock.advance(minutes(16));
    const me = await client.GET('/api/me');
    expect(me.response.status).toBe(401);
    expect(me.error).toMatchObject({ code: 401 });
    expect(await client.refresh()).toBe(false);
  });

  test('logout revokes the token and clears the cookie', async () => {
    const { client, jar } = await signedUp();
    const out = await client.logout();
    expect(out.response.status).toBe(204);
    expect(client.accessToken).toBeNull();
    expect(jar.cookies.has('refresh_token')).toBe(false);
    // Logged out: no token to send, nothing to refresh.
    const again = await client.DELETE('/api/tokens');
    expect(again.response.status).toBe(401);
  });

  test('password reset: a request always 204, a bad token a typed 400', async () => {
    const { client, username } = await signedUp();
    expect(
      (await client.POST('/api/tokens/reset', { body: { email: `${username}@example.com` } })).response
        .status,
    ).toBe(204);
    // @ts-expect-error -- the document requires email
    expect((await client.POST('/api/tokens/reset', { body: {} })).error).toMatchObject({ code: 400 });
    const reset = await client.PUT('/api/tokens/reset', {
      body: { token: 'not-a-token', new_password: 'new one' },
    });
    expect(reset.error?.errors?.json).toHaveProperty('token');
    const refreshed = await client.PUT('/api/tokens', { body: { access_token: 'not-a-token' } });
    expect(refreshed.response.status).toBe(401);
  });

  test('OAuth2 with a provider that is not configured: typed 404s', async () => {
    const { client } = browser();
    const start = await client.GET('/api/tokens/oauth2/{provider}', {
      params: { path: { provider: 'nowhere' } },
      redirect: 'manual',
    });
    expect(start.response.status).toBe(404);
    const back = await client.POST('/api/tokens/oauth2/{provider}', {
      params: { path: { provider: 'nowhere' } },
      body: { code: 'c', state: 's' },
    });
    expect(back.error).toMatchObject({ code: 404 });
  });
});

describe('users, followers, posts, feed', () => {
  test('every resource operation, typed by the document', async () => {
    const susan = await signedUp();
    const john = await signedUp();
    const sid = String(susan.id);
    const jid = String(john.id);
    const { client } = susan;

    expect((await client.GET('/api/me')).data?.id).toBe(susan.id);
    expect((await client.PUT('/api/me', { body: { about_me: 'hi' } })).data?.about_me).toBe('hi');
    expect((await client.GET('/api/users', { params: { query: { limit: 2 } } })).data?.pagination.limit).toBe(
      2,
    );
    expect((await client.GET('/api/users/{id}', { params: { path: { id: jid } } })).data?.username).toBe(
      john.username,
    );

    const notYet = await client.GET('/api/me/following/{id}', { params: { path: { id: jid } } });
    expect(notYet.response.status).toBe(404);
    expect(
      (await client.POST('/api/me/following/{id}', { params: { path: { id: jid } } })).response.status,
    ).toBe(204);
    const twice = await client.POST('/api/me/following/{id}', { params: { path: { id: jid } } });
    expect(twice.error).toMatchObject({ code: 409 });
    expect(
      (await client.GET('/api/me/following/{id}', { params: { path: { id: jid } } })).response.status,
    ).toBe(204);
    expect((await client.GET('/api/me/following')).data?.data.map((u) => u.id)).toEqual([john.id]);
    expect(
      (await client.GET('/api/users/{id}/following', { params: { path: { id: sid } } })).data?.pagination
        .total,
    ).toBe(1);
    expect((await john.client.GET('/api/me/followers')).data?.data.map((u) => u.id)).toEqual([susan.id]);
    expect(
      (await client.GET('/api/users/{id}/followers', { params: { path: { id: jid } } })).data?.pagination
        .total,
    ).toBe(1);

    const post = await john.client.POST('/api/posts', { body: { text: 'first' } });
    expect(post.response.status).toBe(201);
    const pid = String(post.data!.id);
    expect((await client.GET('/api/posts/{id}', { params: { path: { id: pid } } })).data?.text).toBe('first');
    const notMine = await client.PUT('/api/posts/{id}', {
      params: { path: { id: pid } },
      body: { text: 'mine' },
    });
    expect(notMine.error).toMatchObject({ code: 403 });
    expect(
      (await john.client.PUT('/api/posts/{id}', { params: { path: { id: pid } }, body: { text: 'edited' } }))
        .data?.text,
    ).toBe('edited');
    expect((await client.GET('/api/posts')).data?.data.map((p) => p.id)).toContain(post.data!.id);
    expect(
      (await client.GET('/api/users/{id}/posts', { params: { path: { id: jid } } })).data?.pagination.total,
    ).toBe(1);
    expect((await client.GET('/api/feed')).data?.data.map((p) => p.text)).toEqual(['edited']);
    expect((await client.DELETE('/api/posts/{id}', { params: { path: { id: pid } } })).error).toMatchObject({
      code: 403,
    });
    expect(
      (await john.client.DELETE('/api/posts/{id}', { params: { path: { id: pid } } })).response.status,
    ).toBe(204);
    expect(
      (await client.DELETE('/api/me/following/{id}', { params: { path: { id: jid } } })).response.status,
    ).toBe(204);

    const taken = await browser().client.POST('/api/users', {
      body: { username: john.username, email: 'other@example.com', password: 'password' },
    });
    expect(taken.error?.errors?.json?.username).toEqual(['Use a different username.']);
  });

  test('without a token, every operation that needs one answers a typed 401', async () => {
    const { client } = browser(); // never logged in: nothing to refresh
    const id = { params: { path: { id: '1' } } };
    const answers = [
      await client.GET('/api/users'),
      await client.GET('/api/users/{id}', id),
      await client.GET('/api/me'),
      await client.PUT('/api/me', { body: {} }),
      await client.GET('/api/me/following'),
      await client.GET('/api/users/{id}/following', id),
      await client.GET('/api/me/followers'),
      await client.GET('/api/users/{id}/followers', id),
      await client.GET('/api/me/following/{id}', id),
      await client.POST('/api/me/following/{id}', id),
      await client.DELETE('/api/me/following/{id}', id),
      await client.POST('/api/posts', { body: { text: 'x' } }),
      await client.GET('/api/posts'),
      await client.GET('/api/posts/{id}', id),
      await client.PUT('/api/posts/{id}', { ...id, body: { text: 'x' } }),
      await client.DELETE('/api/posts/{id}', id),
      await client.GET('/api/users/{id}/posts', id),
      await client.GET('/api/feed'),
    ];
    expect(answers.map((a) => a.response.status)).toEqual(answers.map(() => 401));
    expect(answers.every((a) => a.error?.code === 401)).toBe(true);
    for (const stream of [client.postsEvents(), client.feedEvents()])
      await expect(stream.next()).rejects.toMatchObject({ status: 401, body: { code: 401 } });
  });
});

describe('the live streams', () => {
  test('posts: in order, resumed from the last id after the server drops the connection', async () => {
    const reader = await signedUp();
    const writer = await signedUp();
    const count = opens('GET /api/events/posts');
    const events = reader.client.postsEvents();
    const first = take(events, 2);
    await opened('GET /api/events/posts', count);
    const post = await writer.client.POST('/api/posts', { body: { text: 'one' } });
    await writer.client.PUT('/api/posts/{id}', {
      params: { path: { id: String(post.data!.id) } },
      body: { text: 'one, edited' },
    });
    const before: PostsEvent[] = await first;
    expect(before.map((e) => e.event)).toEqual(['post', 'post_updated']);

    server.app.server.closeAllConnections();
    await settle(20);
    await writer.client.DELETE('/api/posts/{id}', { params: { path: { id: String(post.data!.id) } } });
    const [deleted] = await take(events, 1);
    expect(deleted).toMatchObject({ event: 'post_deleted', data: { id: post.data!.id } });
    const ids = [...before, deleted].map((e) => (e as { id: number }).id);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    await events.return();
  });

  test('feed: feed_changed on follow; token_expired is yielded, then the stream ends', async () => {
    const reader = await signedUp();
    const author = await signedUp();
    const count = opens('GET /api/events/feed');
    const events = reader.client.feedEvents();
    const first = take(events, 2);
    await opened('GET /api/events/feed', count);
    await reader.client.POST('/api/me/following/{id}', { params: { path: { id: String(author.id) } } });
    await author.client.POST('/api/posts', { body: { text: 'for my followers' } });
    const seen: FeedEvent[] = await first;
    expect(seen.map((e) => e.event)).toEqual(['feed_changed', 'post']);

    server.clock.advance(minutes(16));
    const rest = await take(events, 5);
    expect(rest.map((e) => e.event)).toEqual(['token_expired']);
    expect(await events.next()).toEqual({ done: true, value: undefined });
  });
});

documentProvenByClient(() => calls);
