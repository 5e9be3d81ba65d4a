/**
 * The refresh cookie in a real browser: headless Chromium (Debian's /usr/bin/chromium or
 * $CHROMIUM_PATH) driven by playwright-core against the real service on a random loopback port
 * (startTestServer). Inside the page the tests do what the React client does: log in with
 * `fetch('/api/tokens', {credentials: 'include'})`, keep only the access token, and refresh with
 * `PUT /api/tokens` relying on the HttpOnly cookie the browser stores and sends by itself.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { launchChromium } from '@platform/testing';
import { type Browser, type BrowserContext, type Cookie, type Page } from 'playwright-core';
import type { TestUser } from './support/app';
import { startTestServer, type TestServer } from './support/server';

jest.setTimeout(60_000);

let browser: Browser;
let server: TestServer;
let user: TestUser;
/** Another origin's blank page, as the React dev server would serve the client. */
let otherOrigin: Server;
let otherPort: number;
let context: BrowserContext | undefined;
let pageErrors: string[];

beforeAll(async () => {
  browser = await launchChromium();
  server = await startTestServer();
  user = await server.register({ username: 'browser', email: 'browser@example.com', password: 'secret-pw' });
  otherOrigin = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end('<!doctype html><html><head><title>client</title></head><body></body></html>');
  });
  await new Promise<void>((resolve) => otherOrigin.listen(0, '127.0.0.1', resolve));
  otherPort = (otherOrigin.address() as AddressInfo).port;
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await new Promise((resolve) => (otherOrigin ? otherOrigin.close(resolve) : resolve(undefined)));
});

beforeEach(async () => {
  context = await browser.newContext();
  context.setDefaultTimeout(15_000);
  pageErrors = [];
});

afterEach(async () => {
  expect(pageErrors).toEqual([]);
  await context?.close();
  context = undefined;
});

// ------------------------------------------------------------------ helpers

interface FetchResult {
  status: number;
  body: any;
}

async function newPage(url: string): Promise<Page> {
  const page = await context!.newPage();
  page.on('pageerror', (error) => pageErrors.push(String(error)));
  await page.goto(url);
  return page;
}

/** `POST /api/tokens` from inside the page, as the React client logs in. */
function browserLogin(page: Page, api: string): Promise<FetchResult> {
  return page.evaluate(
    async ({ api, name, password }) => {
      const response = await fetch(`${api}/api/tokens`, {
        method: 'POST',
        headers: { Authorization: `Basic ${btoa(`${name}:${password}`)}` },
        credentials: 'include',
      });
      return { status: response.status, body: await response.json() };
    },
    { api, name: user.username, password: user.password },
  );
}

/** `PUT /api/tokens` from inside the page: the access token in the body, the refresh token left to the browser. */
function browserRefresh(page: Page, api: string, accessToken: string): Promise<FetchResult> {
  return page.evaluate(
    async ({ api, accessToken }) => {
      const response = await fetch(`${api}/api/tokens`, {
        method: 'PUT',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ access_token: accessToken }),
        credentials: 'include',
      });
      return { status: response.status, body: await response.json() };
    },
    { api, accessToken },
  );
}

/** A bearer request from inside the page; `body` is null for a 204. */
function browserCall(
  page: Page,
  api: string,
  method: string,
  path: string,
  accessToken: string | null,
): Promise<FetchResult> {
  return page.evaluate(
    async ({ api, method, path, accessToken }) => {
      const response = await fetch(`${api}${path}`, {
        method,
        headers: { Authorization: `Bearer ${accessToken}`, 'Content-Type': 'application/json' },
        credentials: 'include',
      });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : null };
    },
    { api, method, path, accessToken },
  );
}

async function refreshCookieFor(url: string): Promise<Cookie | undefined> {
  return (await context!.cookies(url)).find((cookie) => cookie.name === 'refresh_token');
}

/** The Cookie header the browser really sent with the next request to `url` that `action` causes. */
async function cookieHeaderSent(
  page: Page,
  method: string,
  url: string,
  action: () => Promise<unknown>,
): Promise<string> {
  const [request] = await Promise.all([
    page.waitForRequest((r) => r.method() === method && r.url() === url),
    action(),
  ]);
  const response = await request.response();
  expect(response).not.toBeNull();
  return (await request.allHeaders()).cookie ?? '';
}

// ------------------------------------------------------------------ tests

describe('the refresh_token cookie in Chromium', () => {
  test('same origin: login sets an HttpOnly session cookie on /api/tokens; refresh works with the cookie alone and rotates it', async () => {
    const api = server.baseUrl;
    const page = await newPage(`${api}/docs`);

    const login = await browserLogin(page, api);
    expect(login.status).toBe(200);
    expect(login.body.refresh_token).toBeNull();
    const firstAccess: string = login.body.access_token;
    expect(typeof firstAccess).toBe('string');

    const cookie = await refreshCookieFor(`${api}/api/tokens`);
    expect(cookie).toMatchObject({
      name: 'refresh_token',
      domain: '127.0.0.1',
      path: '/api/tokens',
      httpOnly: true,
      sameSite: 'Lax',
      secure: false,
      expires: -1,
    });
    expect(cookie!.value.length).toBeGreaterThanOrEqual(20);

    // Scripts cannot read it, even on a page under /api/tokens; a non-HttpOnly cookie on the same
    // path is readable there, so the check is not vacuous.
    const url = new URL(api);
    await context!.addCookies([
      {
        name: 'visible',
        value: 'yes',
        domain: url.hostname,
        path: '/api/tokens',
        httpOnly: false,
        sameSite: 'Lax',
      },
    ]);
    const inside = await newPage(`${api}/api/tokens/oauth2/no-such-provider`);
    const documentCookie = await inside.evaluate(() => String((globalThis as any).document.cookie));
    expect(documentCookie).toContain('visible=yes');
    expect(documentCookie).not.toContain('refresh_token');
    expect(await page.evaluate(() => String((globalThis as any).document.cookie))).not.toContain(
      'refresh_token',
    );
    await inside.close();

    // Refresh with the access token only: the browser adds the cookie by itself.
    let refresh: FetchResult | undefined;
    const sentWithRefresh = await cookieHeaderSent(page, 'PUT', `${api}/api/tokens`, async () => {
      refresh = await browserRefresh(page, api, firstAccess);
    });
    expect(sentWithRefresh).toContain(`refresh_token=${cookie!.value}`);
    expect(refresh!.status).toBe(200);
    expect(refresh!.body.refresh_token).toBeNull();
    const secondAccess: string = refresh!.body.access_token;
    expect(secondAccess).not.toBe(firstAccess);

    const rotated = await refreshCookieFor(`${api}/api/tokens`);
    expect(rotated).toMatchObject({
      path: '/api/tokens',
      httpOnly: true,
      sameSite: 'Lax',
      secure: false,
      expires: -1,
    });
    expect(rotated!.value).not.toBe(cookie!.value);

    // The new access token works; the cookie does not travel outside /api/tokens.
    let meResult: FetchResult | undefined;
    const sentWithMe = await cookieHeaderSent(page, 'GET', `${api}/api/me`, async () => {
      meResult = await browserCall(page, api, 'GET', '/api/me', secondAccess);
    });
    expect(meResult!.status).toBe(200);
    expect(meResult!.body).toMatchObject({ id: user.id, username: user.username });
    expect(sentWithMe).not.toContain('refresh_token');
    expect(await refreshCookieFor(`${api}/api/me`)).toBeUndefined();
    expect(await refreshCookieFor(`${api}/`)).toBeUndefined();

    // A second refresh uses the rotated cookie.
    const again = await browserRefresh(page, api, secondAccess);
    expect(again.status).toBe(200);
    expect((await refreshCookieFor(`${api}/api/tokens`))!.value).not.toBe(rotated!.value);
  });

  test('logout clears the cookie in the browser, and a refresh is then refused', async () => {
    const api = server.baseUrl;
    const page = await newPage(`${api}/docs`);
    const login = await browserLogin(page, api);
    expect(login.status).toBe(200);
    expect(await refreshCookieFor(`${api}/api/tokens`)).toBeDefined();

    const logout = await browserCall(page, api, 'DELETE', '/api/tokens', login.body.access_token);
    expect(logout).toEqual({ status: 204, body: null });
    expect(await refreshCookieFor(`${api}/api/tokens`)).toBeUndefined();

    expect((await browserCall(page, api, 'GET', '/api/me', login.body.access_token)).status).toBe(401);
    const refresh = await browserRefresh(page, api, login.body.access_token);
    expect(refresh.status).toBe(401);
    expect(refresh.body).toMatchObject({ code: 401, message: 'Unauthorized' });
  });

  test('another origin of the same site (the React dev server on localhost:<port>): CORS with credentials and the Lax cookie work', async () => {
    const api = `http://localhost:${new URL(server.baseUrl).port}`;
    const page = await newPage(`http://localhost:${otherPort}/`);
    expect(await page.title()).toBe('client');

    // POST with Authorization: a preflighted, credentialed cross-origin request
    const login = await browserLogin(page, api);
    expect(login.status).toBe(200);
    const cookie = await refreshCookieFor(`${api}/api/tokens`);
    expect(cookie).toMatchObject({
      domain: 'localhost',
      path: '/api/tokens',
      httpOnly: true,
      sameSite: 'Lax',
      secure: false,
      expires: -1,
    });
    expect(await page.evaluate(() => String((globalThis as any).document.cookie))).not.toContain(
      'refresh_token',
    );

    let refresh: FetchResult | undefined;
    const sent = await cookieHeaderSent(page, 'PUT', `${api}/api/tokens`, async () => {
      refresh = await browserRefresh(page, api, login.body.access_token);
    });
    expect(sent).toContain(`refresh_token=${cookie!.value}`);
    expect(refresh!.status).toBe(200);
    const access: string = refresh!.body.access_token;
    expect(access).not.toBe(login.body.access_token);
    expect((await refreshCookieFor(`${api}/api/tokens`))!.value).not.toBe(cookie!.value);

    const meResult = await browserCall(page, api, 'GET', '/api/me', access);
    expect(meResult.status).toBe(200);
    expect(meResult.body.id).toBe(user.id);

    // The client must be able to read a 401 (it triggers the refresh): CORS headers are on errors too.
    const refused = await browserCall(page, api, 'GET', '/api/me', null);
    expect(refused.status).toBe(401);
    expect(refused.body).toMatchObject({ code: 401, message: 'Unauthorized' });
  });
});
