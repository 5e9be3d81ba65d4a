import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { sql } from 'kysely';
import { launchChromium, openForTheseTests } from '@platform/testing';
import type { Browser } from 'playwright-core';
import type { ContainerStatus, SessionAddress } from '../src/sessions/engine';
import { SESSION_COOKIE } from '../src/plugins/app/session-cookies';
import { startTestServer, type TestServer } from './support/server';
import { sessionKit } from './support/sessions';

jest.setTimeout(60_000);

const ROOT = join(__dirname, '..', '..', '..');
const REFUSED_TOKEN =
  'This connect link is invalid, already used or expired: get a new kasm_url from get_kasm_status';
const tokenOf = (kasmUrl: string) => kasmUrl.split('/').at(-1)!;

/** What the test workspace's echo endpoint saw of a proxied request. */
interface Echoed {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * A workspace that tells what reached it: `/echo…` answers the request as JSON (its body in
 * base64), `/redirect` points elsewhere on itself, `/cookies` sets cookies (a session cookie among them).
 */
function echoWorkspace(): Promise<Server> {
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const path = request.url ?? '/';
      if (path === '/redirect') return response.writeHead(302, { location: '/elsewhere?x=1' }).end();
      if (path === '/redirect-absolute') {
        const { port } = server.address() as AddressInfo;
        return response.writeHead(302, { location: `http://127.0.0.1:${port}/there` }).end();
      }
      if (path === '/cookies')
        return response
          .writeHead(200, { 'set-cookie': [`${SESSION_COOKIE}=forged; Path=/`, 'theme=dark; Path=/'] })
          .end('ok');
      const echoed: Echoed = {
        method: request.method ?? '',
        url: path,
        headers: request.headers,
        body: Buffer.concat(chunks).toString('base64'),
      };
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(echoed));
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/** A loopback port nothing listens on right now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/** The test workspace image's own server (tools/images/workspace-test), run by Node here: page + WebSocket echo. */
async function workspaceTestServer(message: string): Promise<{ child: ChildProcess; port: number }> {
  const port = await freePort();
  const child = spawn(process.execPath, [join(ROOT, 'tools/images/workspace-test/server.mjs')], {
    env: { PATH: process.env.PATH, WORKSPACE_TEST_PORT: String(port), KASM_TEST_MESSAGE: message },
    stdio: 'ignore',
  });
  const until = Date.now() + 10_000;
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) return { child, port };
    } catch {
      if (Date.now() > until) throw new Error('the workspace-test server did not start');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/** A WebSocket upgrade over raw HTTP: the status the proxy answered (101 when it went through). */
function upgradeStatus(url: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, {
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': randomBytes(16).toString('base64'),
        ...headers,
      },
    });
    req.on('upgrade', (response, socket) => {
      socket.destroy();
      resolve(response.statusCode ?? 0);
    });
    req.on('response', (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('reaching a session: the connect page, the token exchange and the proxy (in-process engine)', () => {
  const server = openForTheseTests(
    () =>
      startTestServer({
        SESSIONS_ENGINE: 'memory',
        SESSIONS_RECONCILE_MS: '86400000',
        SESSIONS_SWEEP_MS: '86400000',
      }),
    60_000,
  );
  const t = () => server() as TestServer;
  const kit = sessionKit(t);
  let echo: Server;
  let workspace: { child: ChildProcess; port: number };
  /** Where each session's container is, for the engine's status (default: the echo workspace). */
  const addresses = new Map<string, SessionAddress>();

  beforeAll(async () => {
    echo = await echoWorkspace();
    workspace = await workspaceTestServer('hello <through> the proxy');
  });
  afterAll(async () => {
    workspace?.child.kill();
    await new Promise((resolve) => echo?.close(resolve));
  });
  beforeEach(() => {
    // Running containers are reached where the test says (the in-process engine runs nothing).
    const engine = kit.engine();
    const status = engine.status.bind(engine);
    jest.spyOn(engine, 'status').mockImplementation(async (containerId): Promise<ContainerStatus> => {
      const real = await status(containerId);
      if (real.state !== 'running') return real;
      const container = engine.containers.get(containerId)!;
      const { port } = echo.address() as AddressInfo;
      return {
        state: 'running',
        address: addresses.get(container.spec.sessionId) ?? { host: '127.0.0.1', port },
      };
    });
  });
  afterEach(() => jest.restoreAllMocks());

  const exchange = (body: Record<string, unknown>) =>
    t().app.inject({ method: 'POST', url: '/connect', payload: body });
  /** The session's cookie (the exchange of its kasm_url's token), as a Cookie header. */
  const cookieFor = async (session: { kasm_id: string; user_id: string; kasm_url: string }) => {
    const r = await exchange({
      kasm_id: session.kasm_id,
      user_id: session.user_id,
      token: tokenOf(session.kasm_url),
    });
    if (r.statusCode !== 200) throw new Error(`exchange: ${r.statusCode} ${r.body}`);
    const cookie = r.cookies.find((c) => c.name === SESSION_COOKIE)!;
    return `${cookie.name}=${cookie.value}`;
  };
  const proxied = (
    kasmId: string,
    cookie?: string,
    more: { method?: string; url?: string; headers?: Record<string, string>; payload?: string | Buffer } = {},
  ) =>
    t().app.inject({
      method: (more.method ?? 'GET') as 'GET',
      url: `/session/${kasmId}${more.url ?? '/'}`,
      headers: { ...(cookie ? { cookie } : {}), ...more.headers },
      payload: more.payload,
    });

  describe('the connect page', () => {
    test('GET / is the page; its script is same-origin and the service’s CSP allows only that', async () => {
      const page = await t().app.inject('/');
      expect(page.statusCode).toBe(200);
      expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(page.body).toContain('<script src="connect.js" defer></script>');
      expect(page.headers['content-security-policy']).toContain("script-src 'self'");
      const script = await t().app.inject('/connect.js');
      expect(script.statusCode).toBe(200);
      expect(script.headers['content-type']).toBe('application/javascript; charset=utf-8');
      expect(script.body).toContain("fetch('connect'");
    });
  });

  describe('POST /connect (the token exchange)', () => {
    test('spends the token once and sets a cookie for this session’s path only', async () => {
      const session = await kit.running();
      const body = { kasm_id: session.kasm_id, user_id: session.user_id, token: tokenOf(session.kasm_url) };
      const r = await exchange(body);
      expect(r.statusCode).toBe(200);
      expect(r.json()).toEqual({
        kasm_id: session.kasm_id,
        user_id: session.user_id,
        operational_status: 'running',
        session_url: `/session/${session.kasm_id}/`,
      });
      expect(r.headers['cache-control']).toBe('no-store');
      const setCookie = String(r.headers['set-cookie']);
      expect(setCookie).toMatch(
        new RegExp(
          `^${SESSION_COOKIE}=[^;]+; Max-Age=86400; Path=/session/${session.kasm_id}; HttpOnly; SameSite=Strict$`,
        ),
      );
      // Bound to the session and its owner, and signed: nothing a client could make.
      const value = decodeURIComponent(r.cookies[0].value);
      expect(value).toMatch(
        new RegExp(`^${session.kasm_id}\\.${session.user_id}\\.\\d+\\.[A-Za-z0-9+/]{43}$`),
      );

      // Single use.
      const again = await exchange(body);
      expect({ status: again.statusCode, body: again.json() }).toEqual({
        status: 403,
        body: { error_message: REFUSED_TOKEN },
      });
      expect(again.headers['set-cookie']).toBeUndefined();
    });

    test('two exchanges of one token at once: one cookie', async () => {
      const session = await kit.running();
      const body = { kasm_id: session.kasm_id, user_id: session.user_id, token: tokenOf(session.kasm_url) };
      const answers = await Promise.all([exchange(body), exchange(body), exchange(body)]);
      expect(answers.map((a) => a.statusCode).sort()).toEqual([200, 403, 403]);
    });

    test('an expired token, another user, a replaced token, a session over: 403, and nothing is spent', async () => {
      const session = await kit.running();
      const other = await kit.running();
      const token = tokenOf(session.kasm_url);
      // Another user (with a session of their own) cannot use it, and does not spend it.
      const wrongUser = await exchange({ kasm_id: session.kasm_id, user_id: other.user_id, token });
      expect(wrongUser.statusCode).toBe(403);
      expect(wrongUser.json()).toEqual({ error_message: REFUSED_TOKEN });
      // Nor with another session's id.
      expect((await exchange({ kasm_id: other.kasm_id, user_id: session.user_id, token })).statusCode).toBe(
        403,
      );

      // get_kasm_status replaces the token: the first stops working, the new one works.
      const status = await kit.ok('get_kasm_status', { user_id: session.user_id, kasm_id: session.kasm_id });
      expect((await exchange({ kasm_id: session.kasm_id, user_id: session.user_id, token })).statusCode).toBe(
        403,
      );
      const fresh = tokenOf(status.kasm_url);

      // Expired: refused (and still there for what it is worth: nothing was spent).
      await t()
        .database.db.updateTable('sessions')
        .set({ connect_token_expires: sql`now() - interval '1 second'` })
        .where('id', '=', session.id)
        .execute();
      expect(
        (await exchange({ kasm_id: session.kasm_id, user_id: session.user_id, token: fresh })).statusCode,
      ).toBe(403);
      expect((await kit.rowOf(session.id)).connect_token_hash).not.toBeNull();

      // Over: destroy_kasm clears the token; an older one of a session over is refused too.
      const before = await kit.ok('get_kasm_status', { user_id: other.user_id, kasm_id: other.kasm_id });
      await kit.ok('destroy_kasm', { user_id: other.user_id, kasm_id: other.kasm_id });
      expect(
        (await exchange({ kasm_id: other.kasm_id, user_id: other.user_id, token: tokenOf(before.kasm_url) }))
          .statusCode,
      ).toBe(403);
    });

    test('a token while the session starts is good: the answer says it is not running yet', async () => {
      const release = kit.engine().holdStarts();
      try {
        const session = await kit.request();
        const r = await exchange({
          kasm_id: session.kasm_id,
          user_id: session.user_id,
          token: tokenOf(session.kasm_url),
        });
        expect(r.statusCode).toBe(200);
        expect(['requested', 'starting']).toContain(r.json().operational_status);
        // The proxy says so until it runs: 503 with Retry-After, a page that reloads for a browser.
        const cookie = `${r.cookies[0].name}=${r.cookies[0].value}`;
        const api = await proxied(session.kasm_id, cookie);
        expect(api.statusCode).toBe(503);
        expect(api.headers['retry-after']).toBe('2');
        expect(api.headers['content-type']).toBe('application/json; charset=utf-8');
        expect(api.json().error_message).toMatch(
          new RegExp(
            `^Session \\(${session.kasm_id}\\) is not running yet \\((requested|starting), \\d+%\\)`,
          ),
        );
        const page = await proxied(session.kasm_id, cookie, { headers: { accept: 'text/html,*/*' } });
        expect(page.statusCode).toBe(503);
        expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
        expect(page.body).toContain('<meta http-equiv="refresh" content="2">');
      } finally {
        release();
        await t().app.sessions.settled();
      }
    });

    test('malformed input: ids that are not ids are refused like any bad token; wrong types 400; not JSON 415', async () => {
      const session = await kit.running();
      const token = tokenOf(session.kasm_url);
      for (const body of [
        { kasm_id: 'nope', user_id: session.user_id, token },
        { kasm_id: session.kasm_id, user_id: '', token },
        { kasm_id: session.kasm_id, user_id: session.user_id, token: '' },
      ]) {
        const r = await exchange(body);
        expect({ status: r.statusCode, body: r.json() }).toEqual({
          status: 403,
          body: { error_message: REFUSED_TOKEN },
        });
      }
      const missing = await exchange({ kasm_id: session.kasm_id, user_id: session.user_id });
      expect(missing.statusCode).toBe(400);
      expect(missing.json()).toEqual({ error_message: expect.stringContaining('token') });
      expect((await exchange({ kasm_id: 1, user_id: session.user_id, token })).statusCode).toBe(400);
      const text = await t().app.inject({
        method: 'POST',
        url: '/connect',
        headers: { 'content-type': 'text/plain' },
        payload: 'token',
      });
      expect(text.statusCode).toBe(415);
      // None of them spent the token.
      expect((await exchange({ kasm_id: session.kasm_id, user_id: session.user_id, token })).statusCode).toBe(
        200,
      );
    });
  });

  describe('the proxy under /session/<kasm_id>/', () => {
    test('no cookie: 401 (a page for a browser); a forged or tampered cookie: 401', async () => {
      const session = await kit.running();
      const none = await proxied(session.kasm_id);
      expect({ status: none.statusCode, body: none.json() }).toEqual({
        status: 401,
        body: {
          error_message: `No session cookie for session (${session.kasm_id}) in this browser: open the session through its kasm_url`,
        },
      });
      const page = await proxied(session.kasm_id, undefined, { headers: { accept: 'text/html' } });
      expect(page.statusCode).toBe(401);
      expect(page.body).toContain('open the session through its kasm_url');

      const good = await cookieFor(session);
      const value = decodeURIComponent(good.slice(SESSION_COOKIE.length + 1));
      const forged = `${session.kasm_id}.${session.user_id}.9999999999.${'A'.repeat(43)}`;
      const tampered = value.replace(/\.(\d+)\./, '.9999999999.');
      for (const bad of [forged, tampered, 'garbage', `${value}x`]) {
        const r = await proxied(session.kasm_id, `${SESSION_COOKIE}=${encodeURIComponent(bad)}`);
        expect(r.statusCode).toBe(401);
        expect(r.json().error_message).toMatch(/is invalid or expired/);
      }
      // The good one gets through.
      expect((await proxied(session.kasm_id, good)).statusCode).toBe(200);
    });

    test('another user’s cookie (their own session’s) does not open this session: 403', async () => {
      const mine = await kit.running();
      const theirs = await kit.running();
      const theirCookie = await cookieFor(theirs);
      const r = await proxied(mine.kasm_id, theirCookie);
      expect({ status: r.statusCode, body: r.json() }).toEqual({
        status: 403,
        body: {
          error_message: `This session cookie does not open session (${mine.kasm_id}): it belongs to another session or user`,
        },
      });
      expect(
        await upgradeStatus(`${t().baseUrl}/session/${mine.kasm_id}/websockify`, { cookie: theirCookie }),
      ).toBe(403);
    });

    test('a stopped session’s cookie opens nothing any more: 403', async () => {
      const session = await kit.running();
      const cookie = await cookieFor(session);
      expect((await proxied(session.kasm_id, cookie)).statusCode).toBe(200);
      await kit.ok('destroy_kasm', { user_id: session.user_id, kasm_id: session.kasm_id });
      await new Promise((resolve) => setTimeout(resolve, 2100)); // what the proxy learnt of it is forgotten
      const r = await proxied(session.kasm_id, cookie);
      expect({ status: r.statusCode, body: r.json() }).toEqual({
        status: 403,
        body: { error_message: `Session (${session.kasm_id}) is stopped` },
      });
    });

    test('forwards any method and body as they are, the path below the prefix and the query, without the session cookie', async () => {
      const session = await kit.running();
      const cookie = await cookieFor(session);
      const get = await proxied(session.kasm_id, `${cookie}; theme=dark`, { url: '/echo/a%20b/c?x=1&y=%2F' });
      expect(get.statusCode).toBe(200);
      const seen = get.json() as Echoed;
      expect(seen).toMatchObject({ method: 'GET', url: '/echo/a%20b/c?x=1&y=%2F' });
      expect(seen.headers.cookie).toBe('theme=dark');
      // The workspace's own answer, without the service's CSP (its pages bring their scripts).
      expect(get.headers['content-security-policy']).toBeUndefined();
      expect(get.headers['content-type']).toBe('application/json');

      // Bytes of any type, NUL included, for PUT, PATCH, POST and DELETE: not the service's JSON rules.
      const bytes = Buffer.from([0, 1, 2, 0xff, 0x00, 0x41]);
      for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
        const r = await proxied(session.kasm_id, cookie, {
          method,
          url: '/echo/upload',
          headers: { 'content-type': 'application/octet-stream' },
          payload: bytes,
        });
        expect(r.statusCode).toBe(200);
        const echoed = r.json() as Echoed;
        expect(echoed.method).toBe(method);
        expect(Buffer.from(echoed.body, 'base64')).toEqual(bytes);
        expect(echoed.headers['content-type']).toBe('application/octet-stream');
        expect(echoed.headers.cookie).toBeUndefined();
      }
      const json = await proxied(session.kasm_id, cookie, {
        method: 'POST',
        url: '/echo/json',
        headers: { 'content-type': 'application/json' },
        payload: '{"a":"\\u0000", "b": [1,2]}',
      });
      expect(Buffer.from((json.json() as Echoed).body, 'base64').toString()).toBe(
        '{"a":"\\u0000", "b": [1,2]}',
      );
      const text = await proxied(session.kasm_id, cookie, {
        method: 'POST',
        url: '/echo/text',
        headers: { 'content-type': 'text/plain' },
        payload: 'plain text',
      });
      expect(Buffer.from((text.json() as Echoed).body, 'base64').toString()).toBe('plain text');
    });

    test('the workspace’s redirects stay under the session’s path, and it cannot set the session cookie', async () => {
      const session = await kit.running();
      const cookie = await cookieFor(session);
      const redirect = await proxied(session.kasm_id, cookie, { url: '/redirect' });
      expect(redirect.statusCode).toBe(302);
      expect(redirect.headers.location).toBe(`/session/${session.kasm_id}/elsewhere?x=1`);
      const absolute = await proxied(session.kasm_id, cookie, { url: '/redirect-absolute' });
      expect(absolute.headers.location).toBe(`/session/${session.kasm_id}/there`);
      const cookies = await proxied(session.kasm_id, cookie, { url: '/cookies' });
      expect(cookies.headers['set-cookie']).toEqual(['theme=dark; Path=/']);
      // Without the trailing slash: to the session's path, where relative links resolve.
      const bare = await t().app.inject(`/session/${session.kasm_id}?a=1`);
      expect(bare.statusCode).toBe(308);
      expect(bare.headers.location).toBe(`/session/${session.kasm_id}/?a=1`);
    });

    test('a workspace that does not answer: 502 in the service’s format; not an id: 404', async () => {
      const session = await kit.running();
      const cookie = await cookieFor(session);
      addresses.set(session.kasm_id, { host: '127.0.0.1', port: await freePort() });
      const r = await proxied(session.kasm_id, cookie);
      expect(r.statusCode).toBe(502);
      expect(r.json()).toEqual({ error_message: expect.stringMatching(/^The workspace does not answer: /) });
      // The engine out of reach: the same 502, saying why.
      const other = await kit.running();
      const otherCookie = await cookieFor(other);
      jest
        .spyOn(kit.engine(), 'status')
        .mockRejectedValueOnce(new Error('The Docker engine cannot be reached'));
      const unreachable = await proxied(other.kasm_id, otherCookie);
      expect({ status: unreachable.statusCode, body: unreachable.json() }).toEqual({
        status: 502,
        body: { error_message: 'The workspace does not answer: The Docker engine cannot be reached' },
      });
      const notAnId = await t().app.inject('/session/not-an-id/');
      expect({ status: notAnId.statusCode, body: notAnId.json() }).toEqual({
        status: 404,
        body: { error_message: 'Not Found' },
      });
    });

    test('WebSocket upgrades: refused without the cookie, switched with it', async () => {
      const session = await kit.running();
      addresses.set(session.kasm_id, { host: '127.0.0.1', port: workspace.port });
      const url = `${t().baseUrl}/session/${session.kasm_id}/websockify`;
      expect(await upgradeStatus(url)).toBe(401);
      expect(await upgradeStatus(url, { cookie: await cookieFor(session) })).toBe(101);
    });
  });

  describe('in a browser (Chromium)', () => {
    let browser: Browser;
    beforeAll(async () => {
      browser = await launchChromium();
    });
    afterAll(async () => {
      await browser?.close();
    });

    test('the kasm_url opens the workspace through the proxy: its page and its WebSocket echo', async () => {
      const session = await kit.running();
      addresses.set(session.kasm_id, { host: '127.0.0.1', port: workspace.port });
      const context = await browser.newContext();
      try {
        const page = await context.newPage();
        const errors: string[] = [];
        page.on('pageerror', (error) => errors.push(String(error)));
        await page.goto(`${t().baseUrl}${session.kasm_url}`);
        await page.waitForURL(`${t().baseUrl}/session/${session.kasm_id}/`);
        expect(await page.title()).toBe('Workspace test');
        expect(await page.textContent('#message')).toBe('hello <through> the proxy');
        await page.waitForFunction(
          "document.getElementById('echo')?.textContent === 'echo: hello from the page'",
        );
        // The cookie is HttpOnly: the workspace's scripts cannot read it.
        expect(await page.evaluate('document.cookie')).not.toContain(SESSION_COOKIE);
        const [cookie] = await context.cookies();
        expect(cookie).toMatchObject({
          name: SESSION_COOKIE,
          path: `/session/${session.kasm_id}`,
          httpOnly: true,
          sameSite: 'Strict',
        });
        expect(errors).toEqual([]);

        // The token was spent: the same kasm_url again says so on the page.
        const again = await context.newPage();
        await again.goto(`${t().baseUrl}${session.kasm_url}`);
        await again.waitForSelector('#status[data-state="failed"]');
        expect(await again.textContent('#status')).toBe(REFUSED_TOKEN);
        // And the page keeps no token in its address.
        expect(again.url()).toBe(`${t().baseUrl}/`);
      } finally {
        await context.close();
      }
    });
  });
});
