/**
 * The answers the real React client can show (#21): in headless Chromium, a page handles each form's
 * answer the way react-microblog does (parses the body of every non-204 answer, reads
 * `body.errors.json.<field>` when it is not ok and shows it; the reset page reads
 * `errors.json.new_password` and otherwise shows its own "could not be reset" message). A throttled
 * form (registration, reset request, login, password change) and a spent reset link must each show a
 * message, and nothing may throw (a body without `errors` made react-microblog throw).
 */
import { launchChromium } from '@platform/testing';
import type { Browser, Page } from 'playwright-core';
import { startTestServer, type TestServer } from './support/server';
import type { TestUser } from './support/app';

jest.setTimeout(60_000);

let browser: Browser;
let server: TestServer;
let page: Page;
let pageErrors: string[];
let user: TestUser;
let changer: TestUser;

beforeAll(async () => {
  browser = await launchChromium();
  // Low limits so each form meets its own after one attempt.
  server = await startTestServer({
    REGISTRATIONS_PER_ADDRESS: '3',
    RESETS_PER_ADDRESS: '1',
    RESETS_PER_EMAIL: '1000',
    LOGIN_FAILURES_PER_ACCOUNT: '1',
  });
  user = await server.register({ username: 'shown', email: 'shown@example.com', password: 'shown-pw' });
  changer = await server.register({ username: 'changer', password: 'changer-pw' });
  page = await browser.newPage();
  pageErrors = [];
  page.on('pageerror', (error) => pageErrors.push(String(error)));
  // Same origin as the API (a JSON page is as good as any to run the client's code from).
  await page.goto(`${server.baseUrl}/healthz`);
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

afterEach(() => expect(pageErrors).toEqual([]));

interface Submission {
  method: string;
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** The fields the form shows errors beside. */
  fields: string[];
  /** The reset page: a message of its own when `new_password` has none. */
  resetPage?: boolean;
  /** The login page: a 401 is its own flash ("Invalid username or password"). */
  loginPage?: boolean;
}

/** Submits a form as react-microblog does and returns what the page shows (or throws as it would). */
function submit(s: Submission): Promise<{ status: number; shown: string }> {
  return page.evaluate(async ({ method, path, body, headers, fields, resetPage, loginPage }) => {
    const response = await fetch(`/api${path}`, {
      method,
      headers: { 'Content-Type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    // (The page's DOM and the answer's JSON, untyped here: the test's TypeScript knows no DOM.)
    const data: any = response.status === 204 ? null : await response.json();
    const document = (globalThis as any).document;
    let shown = '';
    if (loginPage && response.status === 401) shown = 'Invalid username or password';
    else if (!response.ok) {
      // react-microblog: `setFormErrors(response.body.errors.json)`; a body without `errors` throws here.
      const errors = data.errors.json as Record<string, string[] | undefined>;
      if (resetPage && !errors.new_password) shown = 'Password could not be reset. Request a new link.';
      else shown = fields.flatMap((f) => errors[f] ?? []).join(' ');
    }
    const output = document.createElement('p');
    output.textContent = shown;
    document.body.replaceChildren(output);
    return { status: response.status, shown: document.body.innerText };
  }, s as Required<Submission>);
}

const tryAgain = /^Too many .+: try again in \d+ (second|minute|hour)s?\.$/;

/** Submits `s`: the page gets `status` and shows `shown` (this message, or one this pattern matches). */
async function expectShown(s: Submission, status: number, shown: string | RegExp) {
  const answer = await submit(s);
  expect(answer.status).toBe(status);
  expect(answer.shown).toEqual(typeof shown === 'string' ? shown : expect.stringMatching(shown));
}

test('registration over its limit shows when to try again', async () => {
  const form = (username: string): Submission => ({
    method: 'POST',
    path: '/users',
    body: { username, email: `${username}@example.com`, password: 'password' },
    fields: ['username', 'email', 'password'],
  });
  // Two of this address's three registrations were the set-up's.
  expect((await submit(form('first'))).status).toBe(201);
  await expectShown(form('second'), 429, tryAgain);
});

test('a reset request over its limit shows when to try again', async () => {
  const form: Submission = {
    method: 'POST',
    path: '/tokens/reset',
    body: { email: user.email },
    fields: ['email'],
  };
  expect((await submit(form)).status).toBe(204);
  await expectShown(form, 429, tryAgain);
});

test('a login over its limit shows when to try again', async () => {
  const login = (password: string): Submission => ({
    method: 'POST',
    path: '/tokens',
    headers: { Authorization: `Basic ${Buffer.from(`${user.username}:${password}`).toString('base64')}` },
    fields: ['username', 'password'],
    loginPage: true,
  });
  await expectShown(login('wrong'), 401, 'Invalid username or password');
  await expectShown(login(user.password), 429, tryAgain);
});

test('a password change over the login limit shows when to try again', async () => {
  // Its own user, so the login test's lock does not decide this one.
  const other = changer;
  const change = (old: string): Submission => ({
    method: 'PUT',
    path: '/me',
    headers: { Authorization: `Bearer ${other.token}` },
    body: { old_password: old, password: 'new-password' },
    fields: ['old_password', 'password'],
  });
  await expectShown(change('wrong'), 400, 'Password is incorrect');
  await expectShown(change(other.password), 429, tryAgain);
});

test('a spent reset link shows the reset page own message instead of throwing', async () => {
  const spent: Submission = {
    method: 'PUT',
    path: '/tokens/reset',
    body: { token: 'a-link-already-used-or-expired', new_password: 'new-password' },
    fields: ['new_password'],
    resetPage: true,
  };
  await expectShown(spent, 400, 'Password could not be reset. Request a new link.');
});
