/**
 * Tokens: logins (HTTP Basic), bearer authentication, refresh with rotation, grace period and
 * revoke-all on reuse, logout, the refresh cookie and its attributes per configuration,
 * DISABLE_AUTH and CORS. Everything goes through the real app (`buildTestApp`, over `base` for
 * other configurations) over one fresh database; time moves with the test clock, never by waiting.
 */
import { randomBytes } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { KNOWN_SECRETS } from '@platform/http-kit';
import { loadConfig } from '../src/config';
import { createPasswords } from '../src/users/passwords';
import { createJwt } from '../src/tokens/jwt';
import { createSecretsRepository } from '@platform/db';
import { basic, buildTestApp, type TestApp, type TestUser } from './support/app';

const MINUTE = 60_000;
const DAY = 86_400_000;
const BEARER_CHALLENGE = 'Bearer realm="Authentication Required"';
const ERROR_401 = { code: 401, message: 'Unauthorized', description: expect.stringMatching(/\S/) };

// ------------------------------------------------------------------ helpers

interface SetCookie {
  name: string;
  value: string;
  /** Attribute names lower-cased; flags map to `true`. */
  attributes: Map<string, string | true>;
}

function setCookies(response: LightMyRequestResponse): SetCookie[] {
  const header = response.headers['set-cookie'];
  const lines = header === undefined ? [] : [header].flat().map(String);
  return lines.map((line) => {
    const [pair, ...rest] = line.split(';').map((part) => part.trim());
    const eq = pair.indexOf('=');
    const attributes = new Map<string, string | true>();
    for (const attribute of rest) {
      const at = attribute.indexOf('=');
      if (at < 0) attributes.set(attribute.toLowerCase(), true);
      else attributes.set(attribute.slice(0, at).toLowerCase(), attribute.slice(at + 1));
    }
    return { name: pair.slice(0, eq), value: decodeURIComponent(pair.slice(eq + 1)), attributes };
  });
}

function refreshCookie(response: LightMyRequestResponse): SetCookie | undefined {
  const matching = setCookies(response).filter((c) => c.name === 'refresh_token');
  expect(matching.length).toBeLessThanOrEqual(1);
  return matching[0];
}

interface Pair {
  access: string;
  refresh: string;
}

/** A login's pair: the access token from the body, the refresh token from the cookie (or the body). */
function pairOf(response: LightMyRequestResponse): Pair {
  expect(response.statusCode).toBe(200);
  const body = response.json();
  const refresh =
    typeof body.refresh_token === 'string' ? body.refresh_token : refreshCookie(response)?.value;
  expect(typeof body.access_token).toBe('string');
  expect(typeof refresh).toBe('string');
  return { access: body.access_token, refresh: refresh as string };
}

async function loginPair(t: TestApp, user: Pick<TestUser, 'username' | 'password'>): Promise<Pair> {
  return pairOf(await t.login(user.username, user.password));
}

/** `PUT /api/tokens` (refresh) with this body (none when undefined) and, when given, a refresh cookie. */
function putTokens(
  t: TestApp,
  payload: Record<string, unknown> | undefined,
  options: { cookie?: string; headers?: Record<string, string> } = {},
): Promise<LightMyRequestResponse> {
  const cookie = options.cookie === undefined ? {} : { cookie: `refresh_token=${options.cookie}` };
  return t.app.inject({
    method: 'PUT',
    url: '/api/tokens',
    headers: { ...options.headers, ...cookie },
    payload,
  });
}

/** PUT /api/tokens as the React client does it: the access token in the body, the refresh token in the cookie. */
const refreshWithCookie = (t: TestApp, pair: Pair) =>
  putTokens(t, { access_token: pair.access }, { cookie: pair.refresh });

const refreshWithBody = (t: TestApp, pair: Pair) =>
  putTokens(t, { access_token: pair.access, refresh_token: pair.refresh });

const me = (t: TestApp, token: string | null) => t.as(token, { method: 'GET', url: '/api/me' });

/** 401 as a bearer endpoint answers it: the JSON error body and the Bearer challenge. */
function expectBearer401(response: LightMyRequestResponse): void {
  expect(response.statusCode).toBe(401);
  expect(response.headers['www-authenticate']).toBe(BEARER_CHALLENGE);
  expect(response.headers['content-type']).toMatch(/^application\/json/);
  expect(response.json()).toEqual(ERROR_401);
}

/** 401 as the login answers it: the JSON error body and `WWW-Authenticate: Form` (no browser dialog). */
function expectLogin401(response: LightMyRequestResponse): void {
  expect(response.statusCode).toBe(401);
  expect(response.headers['www-authenticate']).toBe('Form');
  expect(response.headers['content-type']).toMatch(/^application\/json/);
  expect(response.json()).toEqual(ERROR_401);
  expect(refreshCookie(response)).toBeUndefined();
}

async function expectWorks(t: TestApp, token: string, userId: number): Promise<void> {
  const response = await me(t, token);
  expect(response.statusCode).toBe(200);
  expect(response.json().id).toBe(userId);
}

/** The payload of a JWT (no verification). */
const jwtPayload = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString('utf8'));

async function lastSeenInDb(t: TestApp, userId: number): Promise<Date> {
  // last_seen is written in batches (about once a second); the test takes the next batch now.
  await t.app.lastSeen.flush();
  return new Date((await t.storedUser(userId)).last_seen);
}

// ------------------------------------------------------------------ one database for the whole file

/**
 * One fresh database for the file (creating one costs seconds); the default configuration's app is
 * `base`, and other configurations are further instances of the real app over the same database and
 * clock (`variant`), so each costs only an app build.
 */
let base: TestApp;

beforeAll(async () => {
  base = await buildTestApp();
});

afterAll(async () => {
  await base?.close();
});

/**
 * Another configuration of the real app over `base`'s database and clock for a describe block:
 * built before its tests (and handed to `use`), closed after them.
 */
function variant(env: Record<string, string>, use: (t: TestApp) => Promise<void> | void): void {
  let t: TestApp | undefined;
  beforeAll(async () => {
    t = await buildTestApp(env, { over: base });
    await use(t);
  });
  afterAll(async () => {
    await t?.close();
  });
}

describe('DISABLE_AUTH=yes (development)', () => {
  let t: TestApp;
  variant({ DISABLE_AUTH: 'yes' }, (app) => {
    t = app;
  });

  // Runs first in the file: the shared database is still empty.
  test('with no user 1: 401, never 500', async () => {
    expectBearer401(await me(t, null));
    expectBearer401(await t.app.inject({ method: 'DELETE', url: '/api/tokens' }));
  });

  test('token endpoints act as user 1 without any header, and update its last_seen', async () => {
    const first = await t.register({ username: 'first' });
    const second = await t.register({ username: 'second' });
    expect(first.id).toBe(1);
    const before = await lastSeenInDb(t, 1);
    t.clock.advance(MINUTE);

    const response = await me(t, null);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ id: 1, username: 'first' });
    expect((await lastSeenInDb(t, 1)).getTime()).toBeGreaterThanOrEqual(before.getTime() + MINUTE);

    // the header is ignored: even the second user's own token acts as user 1, and so does garbage
    expect((await me(t, second.token)).json().id).toBe(1);
    expect((await me(t, 'garbage')).json().id).toBe(1);
    const post = await t.app.inject({ method: 'POST', url: '/api/posts', payload: { text: 'hello' } });
    expect(post.statusCode).toBe(201);
    expect(post.json().author.id).toBe(1);
  });

  test('logins still check the password', async () => {
    expectLogin401(await t.login('first', 'wrong'));
    expect((await t.login('first', 'password')).statusCode).toBe(200);
  });
});

// ------------------------------------------------------------------ default configuration

describe('tokens (default configuration)', () => {
  let t: TestApp;
  let susan: TestUser;

  beforeAll(async () => {
    t = base;
    susan = await t.register({ username: 'susan', email: 'Susan.Smith@Example.com', password: 'cat' });
  });

  describe('POST /api/tokens (login)', () => {
    test('by username: 200 {access_token, refresh_token: null}, a refresh_token cookie, and the token works', async () => {
      const response = await t.login('susan', 'cat');
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      const body = response.json();
      expect(Object.keys(body).sort()).toEqual(['access_token', 'refresh_token']);
      expect(body.refresh_token).toBeNull();
      expect(body.access_token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
      const cookie = refreshCookie(response);
      expect(cookie?.value).toMatch(/^[\w-]{20,}$/);
      await expectWorks(t, body.access_token, susan.id);
    });

    test('the access token is an HS256 JWT whose only claim is a random token id (no exp: expiry is server-side)', async () => {
      const { access } = await loginPair(t, susan);
      const header = JSON.parse(Buffer.from(access.split('.')[0], 'base64url').toString('utf8'));
      expect(header.alg).toBe('HS256');
      const payload = jwtPayload(access);
      expect(Object.keys(payload)).toEqual(['token']);
      expect(payload.token).toMatch(/^[\w-]{32,}$/);
      const again = jwtPayload((await loginPair(t, susan)).access);
      expect(again.token).not.toBe(payload.token);
    });

    test('by email, in any case', async () => {
      for (const name of ['Susan.Smith@Example.com', 'susan.smith@example.com', 'SUSAN.SMITH@EXAMPLE.COM']) {
        const response = await t.login(name, 'cat');
        expect(response.statusCode).toBe(200);
        await expectWorks(t, response.json().access_token, susan.id);
      }
    });

    test('each login creates a new, independent pair', async () => {
      const first = await loginPair(t, susan);
      const second = await loginPair(t, susan);
      expect(second.access).not.toBe(first.access);
      expect(second.refresh).not.toBe(first.refresh);
      await expectWorks(t, first.access, susan.id);
      await expectWorks(t, second.access, susan.id);
    });

    test('wrong password: 401, WWW-Authenticate: Form', async () => {
      expectLogin401(await t.login('susan', 'dog'));
      expectLogin401(await t.login('susan.smith@example.com', 'dog'));
      // the password is case-sensitive, unlike the email
      expectLogin401(await t.login('susan', 'CAT'));
    });

    test('unknown user: 401, WWW-Authenticate: Form', async () => {
      expectLogin401(await t.login('nobody', 'cat'));
      expectLogin401(await t.login('nobody@example.com', 'cat'));
    });

    test('no Authorization header: 401, WWW-Authenticate: Form', async () => {
      expectLogin401(await t.app.inject({ method: 'POST', url: '/api/tokens' }));
    });

    test('empty username or empty password: 401', async () => {
      expectLogin401(await t.login('', 'cat'));
      expectLogin401(await t.login('susan', ''));
      expectLogin401(await t.login('', ''));
    });

    test.each([
      ['not base64', 'Basic !!!not-base64!!!'],
      ['no colon', `Basic ${Buffer.from('susan').toString('base64')}`],
      ['no credentials', 'Basic'],
      ['another scheme', 'Bearer abc.def.ghi'],
      ['credentials without a scheme', Buffer.from('susan:cat').toString('base64')],
    ])('malformed Basic header (%s): 401, WWW-Authenticate: Form', async (_label, authorization) => {
      expectLogin401(await t.app.inject({ method: 'POST', url: '/api/tokens', headers: { authorization } }));
    });

    test('the Basic scheme name is case-insensitive', async () => {
      const response = await t.app.inject({
        method: 'POST',
        url: '/api/tokens',
        headers: { authorization: basic('susan', 'cat').replace('Basic', 'basic') },
      });
      expect(response.statusCode).toBe(200);
    });

    test('a user without a password cannot log in', async () => {
      const created = await t.database.db
        .insertInto('users')
        .values({ username: 'nopass', email: 'nopass@example.com', password_hash: null, about_me: null })
        .returning('id')
        .executeTakeFirstOrThrow();
      const asUser = await t.as((await loginPair(t, susan)).access, {
        method: 'GET',
        url: `/api/users/${created.id}`,
      });
      expect(asUser.statusCode).toBe(200);
      expect(asUser.json().has_password).toBe(false);
      for (const password of ['x', 'password', 'None', 'null']) {
        expectLogin401(await t.login('nopass', password));
        expectLogin401(await t.login('nopass@example.com', password));
      }
      expectLogin401(await t.login('nopass', ''));
    });
  });

  describe('bearer authentication', () => {
    test('no Authorization header: 401 with the Bearer challenge', async () => {
      expectBearer401(await me(t, null));
    });

    test('"Bearer null" (the React client when logged out): 401', async () => {
      expectBearer401(
        await t.app.inject({ method: 'GET', url: '/api/me', headers: { authorization: 'Bearer null' } }),
      );
      expectBearer401(
        await t.app.inject({ method: 'GET', url: '/api/me', headers: { authorization: 'Bearer undefined' } }),
      );
      expectBearer401(
        await t.app.inject({ method: 'GET', url: '/api/me', headers: { authorization: 'Bearer ' } }),
      );
    });

    test('a tampered JWT (+"x") is refused', async () => {
      const { access } = await loginPair(t, susan);
      await expectWorks(t, access, susan.id);
      expectBearer401(await me(t, `${access}x`));
    });

    test("a signature re-spelt in the last character's unused bits (same bytes) is refused", async () => {
      const { access } = await loginPair(t, susan);
      await expectWorks(t, access, susan.id);
      const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
      // 32 signature bytes in 43 characters: the last one's two low bits are padding.
      const last = ALPHABET.indexOf(access.slice(-1));
      const sibling = `${access.slice(0, -1)}${ALPHABET[last ^ 1]}`;
      const signature = (jwt: string) => Buffer.from(jwt.split('.')[2], 'base64url');
      expect(sibling).not.toBe(access);
      expect(signature(sibling).equals(signature(access))).toBe(true);
      expectBearer401(await me(t, sibling));
      await expectWorks(t, access, susan.id);
    });

    test('a JWT carrying a live token id but signed with another key is refused', async () => {
      const { access } = await loginPair(t, susan);
      const tokenId = jwtPayload(access).token as string;
      // Control: the same id signed with the service's key is accepted.
      await expectWorks(t, createJwt(t.app.secretKey.current()).accessToken(tokenId), susan.id);
      expectBearer401(await me(t, createJwt('another-secret-key').accessToken(tokenId)));
    });

    test('an unsigned JWT (alg "none") with a live token id is refused', async () => {
      const { access } = await loginPair(t, susan);
      const segment = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
      const unsigned = `${segment({ alg: 'none', typ: 'JWT' })}.${segment(jwtPayload(access))}.`;
      expectBearer401(await me(t, unsigned));
    });

    test('the refresh token is not an access token', async () => {
      const { access, refresh } = await loginPair(t, susan);
      await expectWorks(t, access, susan.id);
      expectBearer401(await me(t, refresh));
    });

    test('the bare token id (without the JWT around it) is refused', async () => {
      const { access } = await loginPair(t, susan);
      expectBearer401(await me(t, jwtPayload(access).token));
    });

    test('the scheme name is case-insensitive', async () => {
      const { access } = await loginPair(t, susan);
      for (const scheme of ['bearer', 'BEARER', 'Bearer']) {
        const response = await t.app.inject({
          method: 'GET',
          url: '/api/me',
          headers: { authorization: `${scheme} ${access}` },
        });
        expect(response.statusCode).toBe(200);
      }
      expectBearer401(
        await t.app.inject({ method: 'GET', url: '/api/me', headers: { authorization: `Token ${access}` } }),
      );
    });

    test('every authenticated request updates last_seen', async () => {
      const user = await t.register();
      const before = await lastSeenInDb(t, user.id);

      t.clock.advance(3 * MINUTE);
      const atPosts = t.clock.now();
      expect((await t.as(user.token, { method: 'GET', url: '/api/posts' })).statusCode).toBe(200);
      const afterPosts = await lastSeenInDb(t, user.id);
      expect(afterPosts.getTime()).toBeGreaterThanOrEqual(before.getTime() + 3 * MINUTE);
      expect(Math.abs(afterPosts.getTime() - atPosts.getTime())).toBeLessThan(5_000);

      t.clock.advance(2 * MINUTE);
      const response = await me(t, user.token);
      expect(response.statusCode).toBe(200);
      const reported = new Date(response.json().last_seen).getTime();
      expect(reported).toBeGreaterThanOrEqual(afterPosts.getTime() + 2 * MINUTE);
      expect((await lastSeenInDb(t, user.id)).getTime()).toBe(reported);
    });

    test('a refused token does not update last_seen', async () => {
      const user = await t.register();
      const before = await lastSeenInDb(t, user.id);
      t.clock.advance(MINUTE);
      expectBearer401(await me(t, `${user.token}x`));
      expect((await lastSeenInDb(t, user.id)).getTime()).toBe(before.getTime());
    });
  });

  describe('access token expiry (server-side)', () => {
    test('15 minutes by default: still valid at 14 min, 401 after 15 min + 1 s', async () => {
      const { access } = await loginPair(t, susan);
      t.clock.advance(14 * MINUTE);
      await expectWorks(t, access, susan.id);
      t.clock.advance(MINUTE + 1000);
      expectBearer401(await me(t, access));
    });

    test('15 min + 1 s at once: 401', async () => {
      const { access } = await loginPair(t, susan);
      await expectWorks(t, access, susan.id);
      t.clock.advance(15 * MINUTE + 1000);
      expectBearer401(await me(t, access));
    });

    test('an expired access token can still be refreshed with its refresh token', async () => {
      const pair = await loginPair(t, susan);
      t.clock.advance(15 * MINUTE + 1000);
      expectBearer401(await me(t, pair.access));
      const response = await refreshWithCookie(t, pair);
      expect(response.statusCode).toBe(200);
      await expectWorks(t, response.json().access_token, susan.id);
    });
  });

  describe('PUT /api/tokens (refresh)', () => {
    test('with the refresh token in the cookie only: 200, a new and different pair, a new cookie', async () => {
      const pair = await loginPair(t, susan);
      const response = await refreshWithCookie(t, pair);
      expect(response.statusCode).toBe(200);
      const body = response.json();
      expect(Object.keys(body).sort()).toEqual(['access_token', 'refresh_token']);
      expect(body.refresh_token).toBeNull();
      expect(body.access_token).not.toBe(pair.access);
      const cookie = refreshCookie(response);
      expect(cookie).toBeDefined();
      expect(cookie?.value).not.toBe(pair.refresh);
      expect(cookie?.attributes.get('path')).toBe('/api/tokens');
      expect(cookie?.attributes.get('httponly')).toBe(true);
    });

    test('with the refresh token in the body (no cookie): 200', async () => {
      const pair = await loginPair(t, susan);
      const response = await refreshWithBody(t, pair);
      expect(response.statusCode).toBe(200);
      expect(response.json().access_token).not.toBe(pair.access);
      expect(refreshCookie(response)?.value).not.toBe(pair.refresh);
    });

    test('the body refresh token wins over the cookie', async () => {
      const a = await loginPair(t, susan);
      const b = await loginPair(t, susan);
      // the cookie holds another login's refresh token; the body's (matching) one is used
      const response = await putTokens(
        t,
        { access_token: a.access, refresh_token: a.refresh },
        { cookie: b.refresh },
      );
      expect(response.statusCode).toBe(200);
      // b was untouched
      expect((await refreshWithCookie(t, b)).statusCode).toBe(200);
    });

    test('the new access token works and the new refresh token refreshes again', async () => {
      const pair = await loginPair(t, susan);
      const next = pairOf(await refreshWithCookie(t, pair));
      await expectWorks(t, next.access, susan.id);
      const third = pairOf(await refreshWithCookie(t, next));
      expect(third.access).not.toBe(next.access);
      await expectWorks(t, third.access, susan.id);
    });

    test('the old access token keeps working for the 5 s grace period, then stops', async () => {
      const pair = await loginPair(t, susan);
      const next = pairOf(await refreshWithCookie(t, pair));
      t.clock.advance(4000);
      await expectWorks(t, pair.access, susan.id);
      t.clock.advance(1001);
      expectBearer401(await me(t, pair.access));
      await expectWorks(t, next.access, susan.id);
    });

    test('two racing refreshes of the same pair within the grace both succeed', async () => {
      const pair = await loginPair(t, susan);
      const [first, second] = await Promise.all([refreshWithCookie(t, pair), refreshWithCookie(t, pair)]);
      expect(first.statusCode).toBe(200);
      expect(second.statusCode).toBe(200);
      const a = pairOf(first);
      const b = pairOf(second);
      expect(a.access).not.toBe(b.access);
      expect(a.refresh).not.toBe(b.refresh);
      await expectWorks(t, a.access, susan.id);
      await expectWorks(t, b.access, susan.id);
      // and a late one, still within the grace
      t.clock.advance(3000);
      expect((await refreshWithCookie(t, pair)).statusCode).toBe(200);
    });

    test('reusing a rotated refresh token after the grace: 401 and every token of that user is revoked', async () => {
      const victim = await t.register();
      const bystander = await t.register();
      const bystanderPair = await loginPair(t, bystander);

      const original = await loginPair(t, victim);
      const otherLogin = await loginPair(t, victim);
      const rotated = pairOf(await refreshWithCookie(t, original));
      await expectWorks(t, rotated.access, victim.id);
      await expectWorks(t, otherLogin.access, victim.id);

      t.clock.advance(5001);
      const replay = await refreshWithCookie(t, original);
      expect(replay.statusCode).toBe(401);
      expect(replay.json()).toEqual(ERROR_401);

      // every token of the victim: the replayed pair, its successor, another login, the registration's
      for (const token of [original.access, rotated.access, otherLogin.access, victim.token])
        expectBearer401(await me(t, token));
      expect((await refreshWithCookie(t, rotated)).statusCode).toBe(401);
      expect((await refreshWithCookie(t, otherLogin)).statusCode).toBe(401);

      // another user is not affected
      await expectWorks(t, bystander.token, bystander.id);
      await expectWorks(t, bystanderPair.access, bystander.id);
      expect((await refreshWithCookie(t, bystanderPair)).statusCode).toBe(200);

      // the victim can log in again
      await expectWorks(t, (await loginPair(t, victim)).access, victim.id);
    });

    test('an expired refresh token (after 7 days): 401 and every token of that user is revoked', async () => {
      const user = await t.register();
      const old = await loginPair(t, user);
      t.clock.advance(7 * DAY + 1000);
      // a login made now, whose tokens are perfectly fresh
      const fresh = await loginPair(t, user);
      await expectWorks(t, fresh.access, user.id);

      const response = await refreshWithCookie(t, old);
      expect(response.statusCode).toBe(401);
      expect(response.json()).toEqual(ERROR_401);
      expect(refreshCookie(response)).toBeUndefined();

      expectBearer401(await me(t, fresh.access));
      expect((await refreshWithCookie(t, fresh)).statusCode).toBe(401);
    });

    test('a refresh token still valid just before 7 days', async () => {
      const pair = await loginPair(t, susan);
      t.clock.advance(7 * DAY - MINUTE);
      const response = await refreshWithCookie(t, pair);
      expect(response.statusCode).toBe(200);
      await expectWorks(t, response.json().access_token, susan.id);
    });

    test('a mismatched pair (access of one login, refresh of another): 401 with no side effect', async () => {
      const user = await t.register();
      const a = await loginPair(t, user);
      const b = await loginPair(t, user);
      expect((await putTokens(t, { access_token: a.access, refresh_token: b.refresh })).statusCode).toBe(401);
      expect((await refreshWithCookie(t, { access: b.access, refresh: a.refresh })).statusCode).toBe(401);
      // nothing was revoked or rotated, even after the grace period
      t.clock.advance(5001);
      await expectWorks(t, a.access, user.id);
      await expectWorks(t, b.access, user.id);
      expect((await refreshWithCookie(t, a)).statusCode).toBe(200);
      expect((await refreshWithCookie(t, b)).statusCode).toBe(200);
    });

    test("another user's refresh token with my access token: 401", async () => {
      const mine = await loginPair(t, susan);
      const other = await t.register();
      const theirs = await loginPair(t, other);
      expect((await refreshWithBody(t, { access: mine.access, refresh: theirs.refresh })).statusCode).toBe(
        401,
      );
      await expectWorks(t, theirs.access, other.id);
      await expectWorks(t, mine.access, susan.id);
    });

    test('no refresh token at all (no cookie, nothing in the body): 401', async () => {
      const pair = await loginPair(t, susan);
      const response = await putTokens(t, { access_token: pair.access });
      expect(response.statusCode).toBe(401);
      expect(response.json()).toEqual(ERROR_401);
      const empty = await putTokens(t, { access_token: pair.access, refresh_token: '' });
      expect(empty.statusCode).toBe(401);
      await expectWorks(t, pair.access, susan.id);
    });

    test('missing access_token: 400 validation error', async () => {
      const pair = await loginPair(t, susan);
      const response = await putTokens(t, {}, { cookie: pair.refresh });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject({
        code: 400,
        message: 'Validation Error',
        errors: { json: { access_token: ['Missing data for required field.'] } },
      });
      // no body at all (the React client sends Content-Type: application/json with nothing) is the same
      const noBody = await putTokens(t, undefined, {
        cookie: pair.refresh,
        headers: { 'content-type': 'application/json' },
      });
      expect(noBody.statusCode).toBe(400);
      expect(noBody.json().errors.json.access_token).toEqual(['Missing data for required field.']);
    });

    test('refresh_token: null: 400 "Field may not be null."', async () => {
      const pair = await loginPair(t, susan);
      const response = await putTokens(t, { access_token: pair.access, refresh_token: null });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject({
        code: 400,
        message: 'Validation Error',
        errors: { json: { refresh_token: ['Field may not be null.'] } },
      });
    });

    test('an unknown field: 400 "Unknown field."', async () => {
      const pair = await loginPair(t, susan);
      const response = await putTokens(t, {
        access_token: pair.access,
        refresh_token: pair.refresh,
        extra: 1,
      });
      expect(response.statusCode).toBe(400);
      expect(response.json().errors.json.extra).toEqual(['Unknown field.']);
    });

    test('a garbage, tampered or foreign-key access token: 401, and the real pair is untouched', async () => {
      const pair = await loginPair(t, susan);
      const tokenId = jwtPayload(pair.access).token as string;
      for (const access_token of [
        'garbage',
        '',
        `${pair.access}x`,
        createJwt('another-secret-key').accessToken(tokenId),
      ]) {
        const response = await refreshWithCookie(t, { access: access_token, refresh: pair.refresh });
        expect(response.statusCode).toBe(401);
        expect(response.json()).toEqual(ERROR_401);
      }
      await expectWorks(t, pair.access, susan.id);
      expect((await refreshWithCookie(t, pair)).statusCode).toBe(200);
    });
  });

  describe('DELETE /api/tokens (logout)', () => {
    test('204 with an empty body; the token then gives 401', async () => {
      const pair = await loginPair(t, susan);
      const response = await t.as(pair.access, { method: 'DELETE', url: '/api/tokens' });
      expect(response.statusCode).toBe(204);
      expect(response.body).toBe('');
      expectBearer401(await me(t, pair.access));
    });

    test('only the presented pair is revoked', async () => {
      const user = await t.register();
      const a = await loginPair(t, user);
      const b = await loginPair(t, user);
      expect((await t.as(a.access, { method: 'DELETE', url: '/api/tokens' })).statusCode).toBe(204);
      expectBearer401(await me(t, a.access));
      await expectWorks(t, b.access, user.id);
    });

    test('the refresh token of the revoked pair can no longer refresh', async () => {
      const user = await t.register();
      const pair = await loginPair(t, user);
      expect((await t.as(pair.access, { method: 'DELETE', url: '/api/tokens' })).statusCode).toBe(204);
      expect((await refreshWithCookie(t, pair)).statusCode).toBe(401);
      expect((await refreshWithBody(t, pair)).statusCode).toBe(401);
    });

    test('the refresh cookie is cleared', async () => {
      const pair = await loginPair(t, susan);
      const response = await t.app.inject({
        method: 'DELETE',
        url: '/api/tokens',
        headers: { authorization: `Bearer ${pair.access}`, cookie: `refresh_token=${pair.refresh}` },
      });
      expect(response.statusCode).toBe(204);
      const cookie = refreshCookie(response);
      expect(cookie).toBeDefined();
      expect(cookie?.value).toBe('');
      expect(cookie?.attributes.get('path')).toBe('/api/tokens');
      const maxAge = cookie?.attributes.get('max-age');
      const expires = cookie?.attributes.get('expires');
      const cleared = maxAge === '0' || (typeof expires === 'string' && Date.parse(expires) <= Date.now());
      expect(cleared).toBe(true);
    });

    test("the React client's logout (Content-Type: application/json, no body) works", async () => {
      const pair = await loginPair(t, susan);
      const response = await t.as(pair.access, {
        method: 'DELETE',
        url: '/api/tokens',
        headers: { 'content-type': 'application/json' },
      });
      expect(response.statusCode).toBe(204);
      expectBearer401(await me(t, pair.access));
    });

    test('without a token: 401 (not 500)', async () => {
      expectBearer401(await t.app.inject({ method: 'DELETE', url: '/api/tokens' }));
      expectBearer401(
        await t.app.inject({
          method: 'DELETE',
          url: '/api/tokens',
          headers: { authorization: 'Bearer null' },
        }),
      );
    });

    test('logging out twice: the second time is 401', async () => {
      const pair = await loginPair(t, susan);
      expect((await t.as(pair.access, { method: 'DELETE', url: '/api/tokens' })).statusCode).toBe(204);
      expectBearer401(await t.as(pair.access, { method: 'DELETE', url: '/api/tokens' }));
    });
  });

  describe('the refresh cookie (development, CORS on)', () => {
    test('HttpOnly; Path=/api/tokens; SameSite=Lax; not Secure; a session cookie (no Max-Age/Expires)', async () => {
      const responses = [await t.login('susan', 'cat')];
      responses.push(await refreshWithCookie(t, pairOf(responses[0])));
      for (const response of responses) {
        const cookie = refreshCookie(response);
        expect(cookie).toBeDefined();
        const attributes = cookie!.attributes;
        expect(attributes.get('httponly')).toBe(true);
        expect(attributes.get('path')).toBe('/api/tokens');
        expect(attributes.get('samesite')).toBe('Lax');
        expect(attributes.has('secure')).toBe(false);
        expect(attributes.has('max-age')).toBe(false);
        expect(attributes.has('expires')).toBe(false);
        expect(attributes.has('domain')).toBe(false);
      }
    });
  });

  describe('CORS', () => {
    const origin = 'http://localhost:3000';

    test.each(['/api/tokens', '/api/me'])(
      'a preflight to %s is allowed without authentication',
      async (url) => {
        const response = await t.app.inject({
          method: 'OPTIONS',
          url,
          headers: {
            origin,
            'access-control-request-method': 'PUT',
            'access-control-request-headers': 'authorization,content-type',
          },
        });
        expect(response.statusCode).toBe(204);
        expect(response.headers['access-control-allow-origin']).toBe(origin);
        expect(response.headers['access-control-allow-credentials']).toBe('true');
        const allowedHeaders = String(response.headers['access-control-allow-headers'])
          .toLowerCase()
          .split(/\s*,\s*/);
        expect(allowedHeaders).toEqual(expect.arrayContaining(['authorization', 'content-type']));
        const allowedMethods = String(response.headers['access-control-allow-methods']).split(/\s*,\s*/);
        expect(allowedMethods).toEqual(expect.arrayContaining(['GET', 'POST', 'PUT', 'DELETE']));
        expect(response.headers['www-authenticate']).toBeUndefined();
        expect(response.body).toBe('');
      },
    );

    test('an actual request echoes the origin, with credentials', async () => {
      const { access } = await loginPair(t, susan);
      const response = await t.as(access, { method: 'GET', url: '/api/me', headers: { origin } });
      expect(response.statusCode).toBe(200);
      expect(response.headers['access-control-allow-origin']).toBe(origin);
      expect(response.headers['access-control-allow-credentials']).toBe('true');
      expect(String(response.headers.vary)).toMatch(/origin/i);
      const other = await t.as(access, {
        method: 'GET',
        url: '/api/me',
        headers: { origin: 'https://app.example.org' },
      });
      expect(other.statusCode).toBe(200);
      expect(other.headers['access-control-allow-origin']).toBe('https://app.example.org');
    });

    test('a 401 carries the CORS headers too (the client must read it to refresh)', async () => {
      const response = await t.app.inject({
        method: 'GET',
        url: '/api/me',
        headers: { origin, authorization: 'Bearer null' },
      });
      expectBearer401(response);
      expect(response.headers['access-control-allow-origin']).toBe(origin);
      expect(response.headers['access-control-allow-credentials']).toBe('true');
    });

    test('a login from another origin sets the cookie with the CORS headers', async () => {
      const response = await t.app.inject({
        method: 'POST',
        url: '/api/tokens',
        headers: { origin, authorization: basic('susan', 'cat') },
      });
      expect(response.statusCode).toBe(200);
      expect(response.headers['access-control-allow-origin']).toBe(origin);
      expect(response.headers['access-control-allow-credentials']).toBe('true');
      expect(refreshCookie(response)).toBeDefined();
    });
  });
});

// ------------------------------------------------------------------ other configurations

describe('REFRESH_TOKEN_IN_BODY=yes, REFRESH_TOKEN_IN_COOKIE=no, ACCESS_TOKEN_MINUTES=1', () => {
  let t: TestApp;
  let user: TestUser;

  variant(
    {
      REFRESH_TOKEN_IN_BODY: 'yes',
      REFRESH_TOKEN_IN_COOKIE: 'no',
      ACCESS_TOKEN_MINUTES: '1',
    },
    async (app) => {
      t = app;
      user = await t.register();
    },
  );

  test('login: the refresh token is in the body and no cookie is set', async () => {
    const response = await t.login(user.username, user.password);
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(typeof body.refresh_token).toBe('string');
    expect(body.refresh_token).toMatch(/^[\w-]{20,}$/);
    expect(response.headers['set-cookie']).toBeUndefined();
  });

  test('refresh with the body token: a new refresh token in the body, no cookie', async () => {
    const pair = await loginPair(t, user);
    const response = await refreshWithBody(t, pair);
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(typeof body.refresh_token).toBe('string');
    expect(body.refresh_token).not.toBe(pair.refresh);
    expect(response.headers['set-cookie']).toBeUndefined();
    await expectWorks(t, body.access_token, user.id);
  });

  test('logout sets no cookie', async () => {
    const pair = await loginPair(t, user);
    const response = await t.as(pair.access, { method: 'DELETE', url: '/api/tokens' });
    expect(response.statusCode).toBe(204);
    expect(response.headers['set-cookie']).toBeUndefined();
  });

  test('ACCESS_TOKEN_MINUTES=1: valid at 59 s, 401 after 1 min', async () => {
    const { access } = await loginPair(t, user);
    t.clock.advance(59_000);
    await expectWorks(t, access, user.id);
    t.clock.advance(2000);
    expectBearer401(await me(t, access));
  });
});

describe('production mode (NODE_ENV=production, own SECRET_KEY)', () => {
  let t: TestApp;
  let user: TestUser;
  // Random: a secret written in the repository is public, and production refuses it.
  const secret = randomBytes(32).toString('hex');

  variant({ NODE_ENV: 'production', SECRET_KEY: secret }, async (app) => {
    t = app;
    user = await t.register();
  });

  test('the refresh cookie is Secure; SameSite=None (CORS on), still HttpOnly, Path=/api/tokens, a session cookie', async () => {
    const response = await t.login(user.username, user.password);
    expect(response.statusCode).toBe(200);
    const attributes = refreshCookie(response)!.attributes;
    expect(attributes.get('secure')).toBe(true);
    expect(attributes.get('samesite')).toBe('None');
    expect(attributes.get('httponly')).toBe(true);
    expect(attributes.get('path')).toBe('/api/tokens');
    expect(attributes.has('max-age')).toBe(false);
    expect(attributes.has('expires')).toBe(false);
  });

  test("access tokens are signed with SECRET_KEY: a token signed with the database's key, or with any key written in the repository (the Flask backend's former default 'top-secret!' among them), is refused", async () => {
    const { access } = await loginPair(t, user);
    const tokenId = jwtPayload(access).token as string;
    await expectWorks(t, createJwt(secret).accessToken(tokenId), user.id);
    expect(t.app.secretKey.current()).toBe(secret);
    const databaseKey = await createSecretsRepository(t.database.db).read('secret_key');
    expect(databaseKey).not.toBe(secret);
    expectBearer401(await me(t, createJwt(databaseKey).accessToken(tokenId)));
    expect(KNOWN_SECRETS).toContain('top-secret!');
    for (const known of KNOWN_SECRETS) expectBearer401(await me(t, createJwt(known).accessToken(tokenId)));
  });
});

describe('USE_CORS=no', () => {
  let t: TestApp;
  let user: TestUser;

  variant({ USE_CORS: 'no' }, async (app) => {
    t = app;
    user = await t.register();
  });

  test('the refresh cookie is SameSite=Strict (not Secure in development)', async () => {
    const response = await t.login(user.username, user.password);
    const attributes = refreshCookie(response)!.attributes;
    expect(attributes.get('samesite')).toBe('Strict');
    expect(attributes.get('httponly')).toBe(true);
    expect(attributes.has('secure')).toBe(false);
  });

  test('no CORS headers for another origin', async () => {
    const response = await t.as(user.token, {
      method: 'GET',
      url: '/api/me',
      headers: { origin: 'http://localhost:3000' },
    });
    expect(response.statusCode).toBe(200);
    expect(response.headers['access-control-allow-origin']).toBeUndefined();
    expect(response.headers['access-control-allow-credentials']).toBeUndefined();
  });
});

// ------------------------------------------------------------------ loadConfig

describe('loadConfig', () => {
  test.each([
    ...['yes', 'true', 'on', '1'].map((value) => ({ value, state: 'on' })),
    ...['no', 'false', 'off', '0'].map((value) => ({ value, state: 'off' })),
  ])('booleans: $value is $state', ({ value, state }) => {
    const on = state === 'on';
    const config = loadConfig({
      REFRESH_TOKEN_IN_BODY: value,
      REFRESH_TOKEN_IN_COOKIE: value,
      DISABLE_AUTH: value,
      USE_CORS: value,
    });
    expect(config.refreshTokenInBody).toBe(on);
    expect(config.refreshTokenInCookie).toBe(on);
    expect(config.disableAuth).toBe(on);
    expect(config.useCors).toBe(on);
  });

  test('defaults, and an empty value means the default', () => {
    for (const env of [
      {},
      {
        REFRESH_TOKEN_IN_BODY: '',
        REFRESH_TOKEN_IN_COOKIE: '',
        DISABLE_AUTH: '',
        USE_CORS: '',
        ACCESS_TOKEN_MINUTES: '',
        REFRESH_TOKEN_DAYS: '',
      },
    ]) {
      const config = loadConfig(env);
      expect(config.mode).toBe('development');
      // No default key in any mode: the app signs with the one its migrations made (secret-key.test.ts).
      expect(config.secretKey).toBeUndefined();
      expect(config.refreshTokenInCookie).toBe(true);
      expect(config.refreshTokenInBody).toBe(false);
      expect(config.disableAuth).toBe(false);
      expect(config.useCors).toBe(true);
      expect(config.accessTokenMs).toBe(15 * MINUTE);
      expect(config.refreshTokenMs).toBe(7 * DAY);
      expect(config.graceMsAfterRotation).toBe(5000);
    }
  });

  test('ACCESS_TOKEN_MINUTES and REFRESH_TOKEN_DAYS', () => {
    const config = loadConfig({ ACCESS_TOKEN_MINUTES: '30', REFRESH_TOKEN_DAYS: '2' });
    expect(config.accessTokenMs).toBe(30 * MINUTE);
    expect(config.refreshTokenMs).toBe(2 * DAY);
    expect(() => loadConfig({ ACCESS_TOKEN_MINUTES: 'soon' })).toThrow(/ACCESS_TOKEN_MINUTES/);
    expect(() => loadConfig({ ACCESS_TOKEN_MINUTES: '0' })).toThrow(/ACCESS_TOKEN_MINUTES/);
  });

  /** Random, as an operator's must be: any secret written in the repository is public, and refused. */
  const PRODUCTION_SECRET = randomBytes(32).toString('hex');
  test('cookie attributes by mode', () => {
    expect(loadConfig({}).cookie).toEqual({ secure: false, sameSite: 'lax' });
    expect(loadConfig({ USE_CORS: 'no' }).cookie).toEqual({ secure: false, sameSite: 'strict' });
    expect(loadConfig({ NODE_ENV: 'production', SECRET_KEY: PRODUCTION_SECRET }).cookie).toEqual({
      secure: true,
      sameSite: 'none',
    });
    expect(
      loadConfig({ NODE_ENV: 'production', SECRET_KEY: PRODUCTION_SECRET, USE_CORS: 'no' }).cookie,
    ).toEqual({
      secure: true,
      sameSite: 'strict',
    });
  });

  test('production refuses a SECRET_KEY shorter than 32 characters, and says so', () => {
    const short = randomBytes(24).toString('base64url').slice(0, 31);
    expect(() => loadConfig({ NODE_ENV: 'production', SECRET_KEY: 'x' })).toThrow(/SECRET_KEY.*at least 32/);
    expect(() => loadConfig({ NODE_ENV: 'production', SECRET_KEY: short })).toThrow(
      /SECRET_KEY.*at least 32/,
    );
    expect(loadConfig({ NODE_ENV: 'production', SECRET_KEY: `${short}x` }).secretKey).toBe(`${short}x`);
    // Development and tests keep the short keys they set.
    expect(loadConfig({ SECRET_KEY: 'x' }).secretKey).toBe('x');
  });

  test('ARGON2_* costs that argon2 refuses are configuration errors at start, not 500s at login', async () => {
    for (const bad of ['7', '0', String(2 ** 32)])
      expect(() => loadConfig({ ARGON2_MEMORY_KIB: bad })).toThrow(/ARGON2_MEMORY_KIB/);
    // 8 KiB per lane.
    expect(() => loadConfig({ ARGON2_MEMORY_KIB: '31', ARGON2_PARALLELISM: '4' })).toThrow(
      /ARGON2_MEMORY_KIB/,
    );
    for (const bad of ['0', String(2 ** 32)])
      expect(() => loadConfig({ ARGON2_TIME_COST: bad })).toThrow(/ARGON2_TIME_COST/);
    // The smallest accepted costs do hash and verify.
    const config = loadConfig({ ARGON2_MEMORY_KIB: '8', ARGON2_TIME_COST: '1' });
    const passwords = createPasswords(config);
    expect((await passwords.check(await passwords.hash('pw'), 'pw')).ok).toBe(true);
  });

  test("production refuses the Flask backend's default SECRET_KEY; unset (or empty) there is no default to refuse: the database's key serves", () => {
    expect(() => loadConfig({ NODE_ENV: 'production', SECRET_KEY: 'top-secret!' })).toThrow(/SECRET_KEY/);
    for (const unset of [{}, { SECRET_KEY: '' }]) {
      const config = loadConfig({ NODE_ENV: 'production', ...unset });
      expect(config.mode).toBe('production');
      expect(config.secretKey).toBeUndefined();
    }
    expect(loadConfig({ NODE_ENV: 'production', SECRET_KEY: PRODUCTION_SECRET }).mode).toBe('production');
  });

  test('production refuses every secret written in the repository (KNOWN_SECRETS), whatever its length, and says it is public', () => {
    expect(KNOWN_SECRETS).toContain('top-secret!');
    expect(KNOWN_SECRETS.some((known) => known.length >= 32)).toBe(true);
    for (const known of KNOWN_SECRETS) {
      expect(() => loadConfig({ NODE_ENV: 'production', SECRET_KEY: known })).toThrow(
        known.length >= 32 ? /SECRET_KEY: this value is written in the repository/ : /SECRET_KEY/,
      );
      // Development keeps accepting a key that is set (a test suite's, a tutorial's).
      expect(loadConfig({ SECRET_KEY: known }).secretKey).toBe(known);
    }
  });

  describe("a DATABASE_URL with a password written in the repository (http-kit's shared check)", () => {
    const known = (host: string) => `postgres://u:platform-local@${host}/x`;
    const production = (url: string) =>
      loadConfig({ NODE_ENV: 'production', SECRET_KEY: PRODUCTION_SECRET, DATABASE_URL: url });

    test('production refuses it on a server others reach', () => {
      expect(() => production(known('db.example.com'))).toThrow(
        /^invalid configuration:\n {2}DATABASE_URL: its password/,
      );
    });

    test.each(['postgres', '127.0.0.1'])('production takes it on a private server (%s)', (host) => {
      expect(production(known(host)).database.url).toBe(known(host));
    });

    test('development takes it anywhere', () => {
      expect(loadConfig({ DATABASE_URL: known('db.example.com') }).mode).toBe('development');
    });
  });

  test('production refuses DISABLE_AUTH', () => {
    expect(() =>
      loadConfig({ NODE_ENV: 'production', SECRET_KEY: PRODUCTION_SECRET, DISABLE_AUTH: 'yes' }),
    ).toThrow(/DISABLE_AUTH/);
    expect(() =>
      loadConfig({ NODE_ENV: 'production', SECRET_KEY: PRODUCTION_SECRET, DISABLE_AUTH: '1' }),
    ).toThrow(/DISABLE_AUTH/);
    expect(
      loadConfig({ NODE_ENV: 'production', SECRET_KEY: PRODUCTION_SECRET, DISABLE_AUTH: 'no' }).disableAuth,
    ).toBe(false);
    expect(loadConfig({ DISABLE_AUTH: 'yes' }).disableAuth).toBe(true);
  });
});
