/**
 * The panel's live stream when the service refuses it, in headless Chromium (see
 * panel.browser.test.ts for the setup): the panel follows the stream through the microblog client's
 * `events()`, which waits out a 503 (Retry-After) and resumes by itself; a refusal the client does
 * not retry (a 404 from a misrouted proxy, say) ends its iterator, and the panel reopens the stream
 * after a pause. Offline is shown meanwhile; once the stream is open, posts show live, once.
 */
import { launchChromium } from '@platform/testing';
import type { Browser, BrowserContext, Page, Route } from 'playwright-core';
import type { Post } from '../src/posts/schemas';
import { buildTestApp, type TestApp } from './support/app';

jest.setTimeout(60_000);

let browser: Browser;
let context: BrowserContext;
let testApp: TestApp;
let baseUrl: string;
let pageErrors: string[];

beforeAll(async () => {
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
});

beforeEach(async () => {
  testApp = await buildTestApp({ EVENTS_RETRY_MS: '200' });
  await testApp.app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(testApp.app.server.address() as { port: number }).port}`;
  context = await browser.newContext();
  context.setDefaultTimeout(15_000);
  pageErrors = [];
});

afterEach(async () => {
  await context?.close();
  await testApp.close();
});

const problem = (status: number, title: string, headers: Record<string, string> = {}) => ({
  status,
  headers,
  contentType: 'application/problem+json',
  body: JSON.stringify({ type: 'about:blank', title, status, detail: title }),
});

it('a refused stream is retried (503 waited out, then a 404 reopened after a pause): offline meanwhile, then live', async () => {
  const refusals = [problem(503, 'Service Unavailable', { 'retry-after': '1' }), problem(404, 'Not Found')];
  const streamRequests: number[] = [];
  const page: Page = await context.newPage();
  page.on('pageerror', (error) => pageErrors.push(String(error)));
  await page.route('**/api/microblog/events**', async (route: Route) => {
    streamRequests.push(Date.now());
    const refusal = refusals.shift();
    if (refusal) await route.fulfill(refusal);
    else await route.fallback();
  });
  const before = (await (
    await fetch(`${baseUrl}/api/microblog`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        content: 'before the panel',
        quest_topic: 'online_safety',
        student_name: 'Ada',
      }),
    })
  ).json()) as Post;

  await page.goto(`${baseUrl}/`);
  await page.locator('#live-status').waitFor({ state: 'visible', timeout: 5000 });
  expect(await page.locator('#live-status').textContent()).toBe('Offline, catching up…');
  // The list does not wait for the stream for ever.
  await page.locator(`.quest-post[data-post-id="${before.id}"]`).waitFor({ timeout: 5000 });

  // Refused twice, then open: live again.
  await page.locator('#live-status').waitFor({ state: 'hidden', timeout: 15_000 });
  expect(streamRequests).toHaveLength(3);
  // The 503 was waited out for its Retry-After; the 404 was reopened after a pause of its own.
  expect(streamRequests[1] - streamRequests[0]).toBeGreaterThanOrEqual(900);
  expect(streamRequests[2] - streamRequests[1]).toBeGreaterThanOrEqual(1400);

  const created = await fetch(`${baseUrl}/api/microblog`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ content: 'live at last', quest_topic: 'digital_ethics', student_name: 'Ben' }),
  });
  const live = (await created.json()) as Post;
  await page.locator(`.quest-post[data-post-id="${live.id}"]`).waitFor({ timeout: 2000 });
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(
    await page
      .locator('.quest-post')
      .evaluateAll((cards) => cards.map((c) => c.getAttribute('data-post-id'))),
  ).toEqual([String(live.id), String(before.id)]);
  expect(pageErrors).toEqual([]);
});
