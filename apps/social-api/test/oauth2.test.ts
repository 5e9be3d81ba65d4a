import { randomBytes } from 'node:crypto';
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LightMyRequestResponse } from 'fastify';
import { freePort } from '@platform/db/testing';
import { createJwt, resetFingerprint } from '../src/tokens/jwt';
import { buildTestApp, type TestApp } from './support/app';

/**
 * OAuth2 login against a small fake provider run by the test: the browser leg (GET → 302 to the
 * provider, state in a signed cookie) and the server leg (POST with code and state → the code is
 * exchanged, the user-info endpoint names the email, the user logs in or is created).
 */

const REDIRECT_URI = 'https://client.example.test/oauth2/{provider}/callback';
const redirectFor = (provider: string) => REDIRECT_URI.replace('{provider}', provider);
const CLIENTS: Record<string, { id: string; secret: string }> = {
  foo: { id: 'foo-client', secret: 'foo-secret' },
  bar: { id: 'bar-client', secret: 'bar-secret' },
  gh: { id: 'gh-client', secret: 'gh-secret' },
};

/** What the provider does for one authorization code. */
interface Grant {
  /** The token endpoint's answer: 200 with an access token unless told otherwise. */
  tokenStatus?: number;
  tokenBody?: unknown;
  /** The user-info endpoint's answer for the token issued for this code. */
  userinfo?: unknown;
  userinfoStatus?: number;
}

interface TokenRequest {
  contentType: string | undefined;
  accept: string | undefined;
  form: Record<string, string>;
}

interface FakeProvider {
  baseUrl: string;
  grants: Map<string, Grant>;
  tokenRequests: TokenRequest[];
  userinfoAuthorizations: (string | undefined)[];
  close(): Promise<void>;
}

const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });

const sendJson = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

async function startFakeProvider(): Promise<FakeProvider> {
  const grants = new Map<string, Grant>();
  const issued = new Map<string, Grant>();
  const tokenRequests: TokenRequest[] = [];
  const userinfoAuthorizations: (string | undefined)[] = [];

  const server: Server = createHttpServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://provider');
      if (req.method === 'POST' && url.pathname === '/token') {
        const form = Object.fromEntries(new URLSearchParams(await readBody(req)));
        tokenRequests.push({ contentType: req.headers['content-type'], accept: req.headers.accept, form });
        const client = Object.entries(CLIENTS).find(([, c]) => c.id === form.client_id);
        const grant = grants.get(form.code ?? '');
        if (
          !client ||
          client[1].secret !== form.client_secret ||
          form.grant_type !== 'authorization_code' ||
          form.redirect_uri !== redirectFor(client[0]) ||
          !req.headers['content-type']?.startsWith('application/x-www-form-urlencoded') ||
          !grant
        ) {
          return sendJson(res, 401, { error: 'invalid_grant' });
        }
        grants.delete(form.code); // codes are single use, as with real providers
        if (grant.tokenStatus && grant.tokenStatus !== 200)
          return sendJson(res, grant.tokenStatus, { error: 'server_error' });
        if (grant.tokenBody !== undefined) return sendJson(res, 200, grant.tokenBody);
        const accessToken = `at-${randomBytes(12).toString('hex')}`;
        issued.set(accessToken, grant);
        return sendJson(res, 200, { access_token: accessToken, token_type: 'bearer', scope: 'a b' });
      }
      if (req.method === 'GET' && url.pathname === '/userinfo') {
        userinfoAuthorizations.push(req.headers.authorization);
        const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
        const grant = bearer ? issued.get(bearer) : undefined;
        if (!grant) return sendJson(res, 401, { error: 'invalid_token' });
        if (grant.userinfoStatus && grant.userinfoStatus !== 200)
          return sendJson(res, grant.userinfoStatus, { error: 'nope' });
        return sendJson(res, 200, grant.userinfo);
      }
      return sendJson(res, 404, { error: 'not found' });
    })().catch(() => sendJson(res, 500, { error: 'fake provider failed' }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    grants,
    tokenRequests,
    userinfoAuthorizations,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** `name=value` of a Set-Cookie header, as a browser would send it back. */
function setCookie(
  response: LightMyRequestResponse,
  name: string,
): { pair: string; attributes: string } | undefined {
  const raw = response.headers['set-cookie'];
  const all = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
  const header = all.find((c) => c.startsWith(`${name}=`));
  if (!header) return undefined;
  const semicolon = header.indexOf(';');
  return semicolon < 0
    ? { pair: header, attributes: '' }
    : { pair: header.slice(0, semicolon), attributes: header.slice(semicolon + 1) };
}

const isValidUsername = (name: string) =>
  /^\p{L}/u.test(name) && [...name].length >= 3 && [...name].length <= 64;

describe('OAuth2 login', () => {
  let provider: FakeProvider;
  let t: TestApp;
  let env: Record<string, string>;
  let codes = 0;

  beforeAll(async () => {
    provider = await startFakeProvider();
    const down = `http://127.0.0.1:${await freePort()}`;
    // OpenID Connect's flag, unless told otherwise (`gh` speaks GitHub's /user/emails).
    const entry = (
      client: { id: string; secret: string },
      base: string,
      scopes: string[],
      verifiedField = 'email_verified',
    ) => ({
      client_id: client.id,
      client_secret: client.secret,
      authorize_url: `${base}/authorize`,
      access_token_url: `${base}/token`,
      userinfo_url: `${base}/userinfo`,
      scopes,
      email_verified_field: verifiedField,
    });
    env = {
      OAUTH2_REDIRECT_URI: REDIRECT_URI,
      OAUTH2_PROVIDERS: JSON.stringify({
        foo: entry(CLIENTS.foo, provider.baseUrl, ['a', 'b']),
        bar: entry(CLIENTS.bar, provider.baseUrl, ['c']),
        down: entry({ id: 'down-client', secret: 'down-secret' }, down, []),
        gh: entry(CLIENTS.gh, provider.baseUrl, ['user:email'], 'verified'),
      }),
    };
    t = await buildTestApp(env);
  });

  afterAll(async () => {
    await t?.close();
    await provider?.close();
  });

  /** A fresh authorization code the provider will honour as `grant` says. */
  const grant = (g: Grant) => {
    codes += 1;
    const code = `code-${codes}-${randomBytes(4).toString('hex')}`;
    provider.grants.set(code, g);
    return code;
  };

  /** The browser's first leg: GET, follow nothing, keep the state and the state cookie. */
  const start = async (name = 'foo') => {
    const response = await t.app.inject({ method: 'GET', url: `/api/tokens/oauth2/${name}` });
    expect(response.statusCode).toBe(302);
    const location = new URL(response.headers.location as string);
    const cookie = setCookie(response, 'oauth2_state');
    if (!cookie) throw new Error('no state cookie');
    return {
      response,
      location,
      state: location.searchParams.get('state') as string,
      cookie: cookie.pair,
      cookieAttributes: cookie.attributes,
    };
  };

  /** The second leg: the client posts the code and state it got back, with whatever cookie it has (to `t`, or `to`). */
  const finish = (name: string, body: Record<string, unknown>, cookie?: string, to: TestApp = t) =>
    to.app.inject({
      method: 'POST',
      url: `/api/tokens/oauth2/${name}`,
      payload: body,
      headers: cookie ? { cookie } : {},
    });

  const userCount = () => t.countRows('users');

  const me = async (login: LightMyRequestResponse) => {
    expect(login.statusCode).toBe(200);
    const response = await t.as(login.json().access_token, { url: '/api/me' });
    expect(response.statusCode).toBe(200);
    return response.json();
  };

  /** The second leg of a started flow, with a fresh code whose user info is `userinfo` (an email, say). */
  const finishWith = (
    userinfo: unknown,
    started: { state: string; cookie: string },
    to: TestApp = t,
    name = 'foo',
  ) => finish(name, { code: grant({ userinfo }), state: started.state }, started.cookie, to);

  /** The whole flow for one email (or user-info body) with provider `name`; the POST's response. */
  const loginWith = async (userinfo: unknown, name = 'foo') =>
    finishWith(userinfo, await start(name), t, name);

  /** A 401 that says what is wrong with the address (the service's error format, its own words). */
  const expectAddressRefused = (response: LightMyRequestResponse, words: RegExp) => {
    expect(response.statusCode).toBe(401);
    expect(response.json()).toEqual({
      code: 401,
      message: 'Unauthorized',
      description: expect.stringMatching(words),
    });
    expect(setCookie(response, 'refresh_token')).toBeUndefined();
  };
  const NOT_VERIFIED = /provider has not verified this e-mail address/;
  const NOT_PROVEN = /never proven.*password reset link/;

  /** A reset through the link mailed to the user's address (made as the service makes it), which proves the address. */
  const resetThroughMailedLink = async (userId: number, newPassword: string) => {
    const row = await t.storedUser(userId);
    const token = createJwt(t.app.secretKey.current()).resetToken(
      row.email,
      resetFingerprint(row),
      new Date(t.clock.now().getTime() + 60_000),
    );
    const response = await t.app.inject({
      method: 'PUT',
      url: '/api/tokens/reset',
      payload: { token, new_password: newPassword },
    });
    expect(response.statusCode).toBe(204);
  };

  test('an unknown provider: 404 for GET and POST', async () => {
    const get = await t.app.inject({ method: 'GET', url: '/api/tokens/oauth2/nope' });
    expect(get.statusCode).toBe(404);
    expect(get.json()).toMatchObject({ code: 404, message: 'Not Found' });
    expect(setCookie(get, 'oauth2_state')).toBeUndefined();

    const post = await finish('nope', { code: 'x', state: 'y' });
    expect(post.statusCode).toBe(404);
    expect(post.json()).toMatchObject({ code: 404, message: 'Not Found' });

    // Built-in providers exist only when configured; prototype names are not providers either.
    expect((await t.app.inject({ method: 'GET', url: '/api/tokens/oauth2/github' })).statusCode).toBe(404);
    expect((await t.app.inject({ method: 'GET', url: '/api/tokens/oauth2/constructor' })).statusCode).toBe(
      404,
    );
  });

  test('GET redirects to the authorize URL with client_id, redirect_uri, response_type, scope and state; the state goes in a signed HttpOnly cookie', async () => {
    const { response, location, state, cookie, cookieAttributes } = await start('foo');
    expect(`${location.origin}${location.pathname}`).toBe(`${provider.baseUrl}/authorize`);
    expect(Object.fromEntries(location.searchParams)).toEqual({
      client_id: 'foo-client',
      redirect_uri: 'https://client.example.test/oauth2/foo/callback',
      response_type: 'code',
      scope: 'a b',
      state,
    });
    expect(state.length).toBeGreaterThanOrEqual(16);
    expect(response.body === '' || typeof response.json() === 'object').toBe(true);

    expect(cookieAttributes).toMatch(/HttpOnly/i);
    expect(cookieAttributes).toMatch(/Path=\/api\/tokens\/oauth2/i);
    // Signed: the value carries the state plus a signature, not the bare state.
    const value = decodeURIComponent(cookie.slice('oauth2_state='.length));
    expect(value).toContain(state);
    expect(value).not.toBe(state);
    expect(value).not.toBe(`foo:${state}`);

    const other = await start('bar');
    expect(other.location.searchParams.get('client_id')).toBe('bar-client');
    expect(other.location.searchParams.get('redirect_uri')).toBe(
      'https://client.example.test/oauth2/bar/callback',
    );
    expect(other.location.searchParams.get('scope')).toBe('c');
    expect(other.state).not.toBe(state);
  });

  test('a good code for a new email creates a passwordless user and logs them in', async () => {
    const users = await userCount();
    const { state, cookie } = await start();
    const code = grant({ userinfo: { email: 'newbie@example.org', email_verified: true, name: 'New Bie' } });
    const requestsBefore = provider.tokenRequests.length;
    const login = await finish('foo', { code, state }, cookie);

    expect(login.statusCode).toBe(200);
    expect(login.json()).toEqual({ access_token: expect.any(String), refresh_token: null });
    expect(setCookie(login, 'refresh_token')?.attributes).toMatch(/HttpOnly/i);

    // The exchange the provider saw: form-encoded, JSON wanted, every field right.
    expect(provider.tokenRequests.slice(requestsBefore)).toEqual([
      {
        contentType: expect.stringMatching(/^application\/x-www-form-urlencoded/),
        accept: expect.stringMatching(/application\/json/),
        form: {
          client_id: 'foo-client',
          client_secret: 'foo-secret',
          code,
          grant_type: 'authorization_code',
          redirect_uri: redirectFor('foo'),
        },
      },
    ]);
    expect(provider.userinfoAuthorizations.at(-1)).toMatch(/^Bearer at-/);

    const user = await me(login);
    expect(user).toMatchObject({ username: 'newbie', email: 'newbie@example.org', has_password: false });
    expect(await userCount()).toBe(users + 1);
    const row = await t.storedUser(user.id);
    expect(row.password_hash).toBeNull();

    // Logging in again with the same address finds that user.
    const again = await me(await loginWith({ email: 'newbie@example.org', email_verified: true }));
    expect(again.id).toBe(user.id);
    expect(await userCount()).toBe(users + 1);
  });

  // Changed by #21: a local account is reached only once its address is proven (here by a reset
  // through the mailed link); before, any provider address in any case logged in.
  test("an existing user's proven email, in any case, logs in as that user and creates nobody", async () => {
    const carol = await t.register({ username: 'carol', email: 'carol@example.com', password: 'carol-pw' });
    await resetThroughMailedLink(carol.id, 'carol-pw');
    const users = await userCount();
    const user = await me(await loginWith({ email: 'CAROL@Example.COM', email_verified: true }));
    expect(user).toMatchObject({
      id: carol.id,
      username: 'carol',
      email: 'carol@example.com',
      has_password: true,
    });
    expect(await userCount()).toBe(users);
    // Their password still works.
    expect((await t.login('carol', 'carol-pw')).statusCode).toBe(200);
  });

  test('the state must match the signed cookie of the same provider: 401 otherwise, and the code is never exchanged', async () => {
    const requestsBefore = provider.tokenRequests.length;
    const code = grant({ userinfo: { email: 'mallory@example.org', email_verified: true } });
    const users = await userCount();

    const mismatch = await start();
    const wrongState = await finish('foo', { code, state: `${mismatch.state}x` }, mismatch.cookie);
    expect(wrongState.statusCode).toBe(401);
    expect(wrongState.json()).toMatchObject({ code: 401, message: 'Unauthorized' });

    const noCookie = await start();
    expect((await finish('foo', { code, state: noCookie.state })).statusCode).toBe(401);

    const tampered = await start();
    const [name, value] = [
      tampered.cookie.slice(0, tampered.cookie.indexOf('=')),
      tampered.cookie.slice(tampered.cookie.indexOf('=') + 1),
    ];
    const flipped = value.slice(0, -1) + (value.endsWith('A') ? 'B' : 'A');
    expect((await finish('foo', { code, state: tampered.state }, `${name}=${flipped}`)).statusCode).toBe(401);

    const unsigned = await start();
    expect(
      (
        await finish(
          'foo',
          { code, state: unsigned.state },
          `oauth2_state=${encodeURIComponent(`foo:${unsigned.state}`)}`,
        )
      ).statusCode,
    ).toBe(401);
    expect(
      (await finish('foo', { code, state: unsigned.state }, `oauth2_state=${unsigned.state}`)).statusCode,
    ).toBe(401);

    // A genuine cookie, but issued for another provider.
    const fromBar = await start('bar');
    expect((await finish('foo', { code, state: fromBar.state }, fromBar.cookie)).statusCode).toBe(401);

    expect(provider.tokenRequests.length).toBe(requestsBefore);
    expect(provider.grants.has(code)).toBe(true);
    expect(await userCount()).toBe(users);
  });

  test('the state cookie is single use: the answer clears it, and replaying it is a 401', async () => {
    const started = await start();
    const first = await finishWith({ email: 'once@example.org', email_verified: true }, started);
    expect(first.statusCode).toBe(200);
    const cleared = setCookie(first, 'oauth2_state');
    expect(cleared?.attributes).toMatch(/Expires=Thu, 01 Jan 1970|Max-Age=0/i);

    // A client that kept the cookie anyway, with a fresh code the provider would honour.
    const replay = await finishWith({ email: 'once@example.org', email_verified: true }, started);
    expect(replay.statusCode).toBe(401);

    // A state spent by a failed exchange is spent too.
    const failed = await start();
    expect(
      (await finish('foo', { code: grant({ tokenStatus: 500 }), state: failed.state }, failed.cookie))
        .statusCode,
    ).toBe(401);
    expect((await finishWith({ email: 'once@example.org', email_verified: true }, failed)).statusCode).toBe(
      401,
    );
  });

  test('a spent state stays spent on every instance of the service (it is recorded in the database)', async () => {
    const started = await start();
    expect((await finishWith({ email: 'twice@example.org', email_verified: true }, started)).statusCode).toBe(
      200,
    );
    // A second instance over the same database (same secret and providers), as behind a load balancer.
    const other = await buildTestApp(env, { over: t });
    try {
      const replay = await finishWith({ email: 'twice@example.org', email_verified: true }, started, other);
      expect(replay.statusCode).toBe(401);
      // ...while a fresh state started on the first instance finishes on the second.
      const login = await finishWith(
        { email: 'twice@example.org', email_verified: true },
        await start(),
        other,
      );
      expect(login.statusCode).toBe(200);
    } finally {
      await other.close();
    }
  });

  test('a failed code exchange is a 401: provider 401, provider 500, or a 200 without access_token', async () => {
    const users = await userCount();
    for (const g of [
      { tokenStatus: 401 },
      { tokenStatus: 500 },
      { tokenBody: { error: 'bad_verification_code' } },
      { tokenBody: { access_token: '' } },
    ]) {
      const { state, cookie } = await start();
      const response = await finish('foo', { code: grant(g), state }, cookie);
      expect(response.statusCode).toBe(401);
      expect(response.json()).toMatchObject({ code: 401, message: 'Unauthorized' });
    }
    // A code the provider does not know (its own 401).
    const { state, cookie } = await start();
    expect((await finish('foo', { code: 'never-issued', state }, cookie)).statusCode).toBe(401);
    expect(await userCount()).toBe(users);
  });

  test('a failed user lookup is a 401: user-info error, or no usable email', async () => {
    const users = await userCount();
    const cases: Grant[] = [
      { userinfoStatus: 401, userinfo: { email: 'x@example.org', email_verified: true } },
      { userinfoStatus: 500, userinfo: { email: 'x@example.org', email_verified: true } },
      { userinfo: { name: 'no email here' } },
      { userinfo: { email: 'not-an-address', email_verified: true } },
      { userinfo: [] },
      // Longer than a user's email may be (120): no user can have it.
      { userinfo: { email: `${'x'.repeat(60)}@${'y'.repeat(60)}.org`, email_verified: true } },
    ];
    for (const g of cases) {
      const { state, cookie } = await start();
      const response = await finish('foo', { code: grant(g), state }, cookie);
      expect(response.statusCode).toBe(401);
    }
    expect(await userCount()).toBe(users);
  });

  test('an unreachable provider is a 401, not a 500', async () => {
    const { state, cookie } = await start('down');
    const response = await finish('down', { code: 'whatever', state }, cookie);
    expect(response.statusCode).toBe(401);
    expect(response.json()).toMatchObject({ code: 401, message: 'Unauthorized' });
  });

  test('a username collision gives the new user a suffix, never a 500', async () => {
    await t.register({ username: 'dave', email: 'dave@example.com', password: 'dave-pw' });
    const second = await me(await loginWith({ email: 'dave@elsewhere.org', email_verified: true }));
    expect(second.email).toBe('dave@elsewhere.org');
    expect(second.username).not.toBe('dave');
    expect(second.username.startsWith('dave')).toBe(true);
    expect(isValidUsername(second.username)).toBe(true);

    const third = await me(await loginWith({ email: 'dave@third.example.net', email_verified: true }));
    expect(third.username.startsWith('dave')).toBe(true);
    expect(new Set(['dave', second.username, third.username]).size).toBe(3);
  });

  test('local parts that break the username rules still give valid usernames', async () => {
    const viewer = await t.register({
      username: 'viewer',
      email: 'viewer@example.com',
      password: 'viewer-pw',
    });
    const long = `a${'b'.repeat(63)}`; // 64 characters: a valid local part, near the username limit
    for (const email of [
      '1x@example.org',
      '_under@example.org',
      'ab@example.org',
      'z@example.org',
      `${long}@example.org`,
      `${long}@example.net`,
    ]) {
      const user = await me(await loginWith({ email, email_verified: true }));
      expect(user.email).toBe(email);
      expect(isValidUsername(user.username)).toBe(true);
      // The user can be looked up by that username like anyone else.
      const byName = await t.as(viewer.token, { url: `/api/users/${encodeURIComponent(user.username)}` });
      expect(byName.json().id).toBe(user.id);
    }
  });

  test('GitHub-style user info (a list of addresses) picks the primary one', async () => {
    const user = await me(
      await loginWith(
        [
          { email: 'secondary@example.org', primary: false, verified: true },
          { email: 'main@example.org', primary: true, verified: true },
        ],
        'gh',
      ),
    );
    expect(user).toMatchObject({ email: 'main@example.org', username: 'main', has_password: false });
  });

  test('GitHub-style user info: an unverified primary gives way to a verified address; none verified is a 401 that says so', async () => {
    const user = await me(
      await loginWith(
        [
          { email: 'claimed@example.org', primary: true, verified: false },
          { email: 'not-an-address', primary: false, verified: true },
          { email: 'checked@example.org', primary: false, verified: true },
        ],
        'gh',
      ),
    );
    expect(user).toMatchObject({ email: 'checked@example.org', has_password: false });

    const users = await userCount();
    for (const list of [
      [{ email: 'claimed@example.org', primary: true, verified: false }],
      [
        { email: 'claimed@example.org', primary: true },
        { email: 'other@example.org', primary: false, verified: 'no' },
      ],
    ])
      expectAddressRefused(await loginWith(list, 'gh'), NOT_VERIFIED);
    // GitHub's flag is `verified`: OpenID's name for it means nothing from this provider.
    expectAddressRefused(
      await loginWith([{ email: 'claimed@example.org', primary: true, email_verified: true }], 'gh'),
      NOT_VERIFIED,
    );
    expect(await userCount()).toBe(users);
  });

  test('an address the provider does not verify never signs in: no account is created, and an existing one (local, or made by a verified login) is not reached', async () => {
    const victim = await t.register({
      username: 'victim',
      email: 'victim@example.com',
      password: 'victim-pw',
    });
    // Proven, so that only the provider's flag stands between the attacker and the account.
    await resetThroughMailedLink(victim.id, 'victim-pw');
    const victimToken = (await t.login('victim', 'victim-pw')).json().access_token as string;
    const oauthUser = await me(await loginWith({ email: 'oauth-victim@example.org', email_verified: true }));
    const users = await userCount();
    for (const email of [
      'victim@example.com',
      'VICTIM@example.com',
      'oauth-victim@example.org',
      'brand-new@example.org',
    ])
      for (const flag of [
        { email_verified: false },
        {},
        { email_verified: 'false' },
        { email_verified: 1 },
        { verified: true },
      ])
        expectAddressRefused(await loginWith({ email, ...flag }), NOT_VERIFIED);
    expect(await userCount()).toBe(users);
    // The accounts are untouched: their owners still get in.
    expect((await t.login('victim', 'victim-pw')).statusCode).toBe(200);
    expect((await t.as(victimToken, { url: '/api/me' })).statusCode).toBe(200);
    expect((await me(await loginWith({ email: 'oauth-victim@example.org', email_verified: true }))).id).toBe(
      oauthUser.id,
    );
    // A provider that sends the flag as a string (AWS Cognito does) is understood.
    expect((await me(await loginWith({ email: 'Victim@example.com', email_verified: 'true' }))).id).toBe(
      victim.id,
    );
  });

  test("an address registered locally by someone else does not capture its owner's verified sign-in; once the owner proves the address by the mailed reset link, the sign-in lands there and the registrant is out", async () => {
    // The attacker registers the victim's address first, with a password of their own.
    const squatter = await t.register({
      username: 'squatter',
      email: 'owner@example.net',
      password: 'squat-pw',
    });
    const users = await userCount();
    expectAddressRefused(await loginWith({ email: 'owner@example.net', email_verified: true }), NOT_PROVEN);
    expect(await userCount()).toBe(users);
    expect((await t.storedUser(squatter.id)).email_verified).toBe(false);

    // The owner follows the reset link mailed to their address: the registrant's password and
    // sessions end, and the verified sign-in now reaches the account.
    await resetThroughMailedLink(squatter.id, 'owners-own-pw');
    expect((await t.storedUser(squatter.id)).email_verified).toBe(true);
    expect((await t.login('squatter', 'squat-pw')).statusCode).toBe(401);
    expect((await t.as(squatter.token, { url: '/api/me' })).statusCode).toBe(401);
    expect((await me(await loginWith({ email: 'owner@example.net', email_verified: true }))).id).toBe(
      squatter.id,
    );
  });

  test("a passwordless account whose address was never proven (generated, or made by a login before flags were checked) becomes the verified address owner's: its earlier sessions end", async () => {
    const early = await loginWith({ email: 'early@example.org', email_verified: true });
    const earlyUser = await me(early);
    // As the migration leaves an account made before verification was required.
    await t.database.db
      .updateTable('users')
      .set({ email_verified: false })
      .where('id', '=', earlyUser.id)
      .execute();
    const login = await loginWith({ email: 'early@example.org', email_verified: true });
    expect((await me(login)).id).toBe(earlyUser.id);
    expect((await t.as(early.json().access_token, { url: '/api/me' })).statusCode).toBe(401);
    expect((await t.storedUser(earlyUser.id)).email_verified).toBe(true);
  });

  test('a new address clears the proof (a change of case does not): a verified sign-in of the new address does not reach an account with a password', async () => {
    const user = await t.register({ username: 'mover', email: 'mover@example.com', password: 'mover-pw' });
    await resetThroughMailedLink(user.id, 'mover-pw');
    expect((await t.storedUser(user.id)).email_verified).toBe(true);
    const token = (await t.login('mover', 'mover-pw')).json().access_token as string;
    const put = (email: string) => t.as(token, { method: 'PUT', url: '/api/me', payload: { email } });
    expect((await put('MOVER@example.com')).statusCode).toBe(200);
    expect((await t.storedUser(user.id)).email_verified).toBe(true);
    expect((await put('moved@example.com')).statusCode).toBe(200);
    expect((await t.storedUser(user.id)).email_verified).toBe(false);
    expectAddressRefused(await loginWith({ email: 'moved@example.com', email_verified: true }), NOT_PROVEN);
  });

  test('missing code or state: 400 validation errors', async () => {
    const { state, cookie } = await start();
    const noCode = await finish('foo', { state }, cookie);
    expect(noCode.statusCode).toBe(400);
    expect(noCode.json()).toMatchObject({
      message: 'Validation Error',
      errors: { json: { code: ['Missing data for required field.'] } },
    });

    const empty = await finish('foo', {}, cookie);
    expect(empty.statusCode).toBe(400);
    expect(empty.json().errors.json).toEqual({
      code: ['Missing data for required field.'],
      state: ['Missing data for required field.'],
    });

    // A refused body did not spend the state.
    expect(
      (await finishWith({ email: 'retry@example.org', email_verified: true }, { state, cookie })).statusCode,
    ).toBe(200);
  });

  // Last: it moves the clock.
  test('a state cookie lasts 10 minutes, also on the server side', async () => {
    const stale = await start();
    const fresh = await start();
    t.clock.advance(10 * 60_000 - 5_000);
    expect((await finishWith({ email: 'intime@example.org', email_verified: true }, fresh)).statusCode).toBe(
      200,
    );
    t.clock.advance(6_000);
    expect((await finishWith({ email: 'late@example.org', email_verified: true }, stale)).statusCode).toBe(
      401,
    );
  });
});
