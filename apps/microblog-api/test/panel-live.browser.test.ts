/**
 * The panel's live updates in headless Chromium (see panel.browser.test.ts for the setup), against
 * the real service on real sockets: two panels see each other's posts, replies and likes within a
 * second without a reload, nothing twice; after the service restarts, a panel catches up with what
 * was written meanwhile.
 */
import type { FastifyInstance } from 'fastify';
import { openDatabase, type Database } from '@platform/db';
import { launchChromium } from '@platform/testing';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { buildApp } from '../src/app';
import type { MicroblogDatabase } from '../src/db/schema';
import type { Post } from '../src/posts/schemas';
import { buildTestApp, type TestApp } from './support/app';

jest.setTimeout(60_000);

let browser: Browser;
let context: BrowserContext;
let testApp: TestApp;
let baseUrl: string;
let port: number;
/** Apps and databases this test started besides `testApp` (closed after it). */
const extra: { close(): Promise<void> }[] = [];
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
  port = (testApp.app.server.address() as { port: number }).port;
  baseUrl = `http://127.0.0.1:${port}`;
  context = await browser.newContext();
  context.setDefaultTimeout(15_000);
  pageErrors = [];
});

afterEach(async () => {
  await context?.close();
  for (const e of extra.splice(0).reverse()) await e.close();
  await testApp.close();
});

async function openPanel(): Promise<Page> {
  const page = await context.newPage();
  page.on('pageerror', (error) => pageErrors.push(String(error)));
  const response = await page.goto(`${baseUrl}/`);
  expect(response?.status()).toBe(200);
  await page.locator('#quest-posts-display:not([aria-busy])').waitFor({ state: 'attached' });
  return page;
}

/** Another instance of the service on the same database, listening on `listenPort` (0: any). */
async function instance(listenPort = 0): Promise<{ app: FastifyInstance; url: string }> {
  const database: Database<MicroblogDatabase> = await openDatabase(testApp.config.database);
  const app = await buildApp(testApp.config, { database });
  extra.push({ close: () => database.close() }, { close: () => app.close() });
  await app.listen({ port: listenPort, host: '127.0.0.1' });
  return { app, url: `http://127.0.0.1:${(app.server.address() as { port: number }).port}` };
}

async function apiPost(url: string, path: string, body: object): Promise<Record<string, unknown>> {
  const response = await fetch(`${url}/api/microblog${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(response.status).toBeLessThan(300);
  return (await response.json()) as Record<string, unknown>;
}

const cardOf = (page: Page, id: number) => page.locator(`.quest-post[data-post-id="${id}"]`);

async function expectShownOnce(page: Page, postId: number, replies: number): Promise<void> {
  expect(await cardOf(page, postId).count()).toBe(1);
  expect(await cardOf(page, postId).locator('.reply').count()).toBe(replies);
  const replyIds = await cardOf(page, postId)
    .locator('.reply')
    .evaluateAll((items) => items.map((item) => item.getAttribute('data-reply-id')));
  expect(new Set(replyIds).size).toBe(replies);
}

/** Waits until the card of `postId` shows `count` likes (within `timeoutMs`). */
async function likesShown(page: Page, postId: number, count: string, timeoutMs = 10_000): Promise<void> {
  const likes = cardOf(page, postId).locator('.like-button .reaction-count');
  const deadline = Date.now() + timeoutMs;
  while ((await likes.textContent()) !== count) {
    if (Date.now() > deadline) throw new Error(`the like count of post ${postId} is not ${count}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('the panel live', () => {
  it('two panels: a post, a reply and a Like in one show up in the other within a second, once', async () => {
    const writer = await openPanel();
    const reader = await openPanel();

    const content = `Live from the other panel ${Date.now()}`;
    await writer.fill('#student_name', 'Ada');
    await writer.selectOption('#quest_topic', 'digital_footprint');
    await writer.fill('#content', content);
    const created = writer.waitForResponse(
      (r) => r.url() === `${baseUrl}/api/microblog` && r.request().method() === 'POST',
    );
    await writer.click('#quest-post-form [type="submit"]');
    const post = (await (await created).json()) as Post;
    await cardOf(reader, post.id).waitFor({ timeout: 1000 });
    expect(await reader.locator('.quest-post').first().getAttribute('data-post-id')).toBe(String(post.id));
    expect(await cardOf(reader, post.id).locator('.post-content').textContent()).toBe(content);

    // A reply and a Like in the reader's panel reach the writer's.
    const replyForm = cardOf(reader, post.id).locator('form.reply-form');
    await replyForm.locator('.reply-content-input').fill('Nice one');
    await replyForm.locator('.reply-submit').click();
    await cardOf(writer, post.id).locator('.reply', { hasText: 'Nice one' }).waitFor({ timeout: 1000 });
    await cardOf(reader, post.id).locator('.like-button').click();
    await likesShown(writer, post.id, '1', 1000);

    await new Promise((r) => setTimeout(r, 300));
    for (const page of [writer, reader]) {
      await expectShownOnce(page, post.id, 1);
      expect(await cardOf(page, post.id).locator('.reply-count').textContent()).toBe('1 reply');
      expect(await cardOf(page, post.id).locator('.like-button .reaction-count').textContent()).toBe('1');
      expect(await page.locator('.quest-post').count()).toBe(1);
      expect(await page.locator('#live-status').isHidden()).toBe(true);
    }
    expect(pageErrors).toEqual([]);
  });

  it('after the service restarts, the panel catches up with what was written meanwhile, without a reload', async () => {
    const page = await openPanel();
    const first = (await apiPost(baseUrl, '', {
      content: 'before the restart',
      quest_topic: 'online_safety',
      student_name: 'Ben',
    })) as unknown as Post;
    await cardOf(page, first.id).waitFor({ timeout: 1000 });
    await page.evaluate('window.stayed = true');

    // The service stops (its streams end with a retry hint); the panel says it is offline.
    await testApp.app.close();
    await page.locator('#live-status').waitFor({ state: 'visible', timeout: 5000 });
    expect(await page.locator('#live-status').textContent()).toBe('Offline, catching up…');

    // Meanwhile, through another instance on the same database: a post, a reply and a Like.
    const other = await instance();
    const second = (await apiPost(other.url, '', {
      content: 'written while it was down',
      quest_topic: 'privacy_security',
      student_name: 'Cleo',
    })) as unknown as Post;
    await apiPost(other.url, '/reply', { post_id: first.id, content: 'a reply meanwhile' });
    await apiPost(other.url, '/reaction', { post_id: first.id });

    // Back on its address: the panel reconnects with its last event id and is replayed the rest.
    await instance(port);
    await cardOf(page, second.id).waitFor({ timeout: 10_000 });
    await cardOf(page, first.id).locator('.reply', { hasText: 'a reply meanwhile' }).waitFor();
    await likesShown(page, first.id, '1');
    await page.locator('#live-status').waitFor({ state: 'hidden' });
    expect(await page.evaluate('window.stayed')).toBe(true);
    expect(
      await page
        .locator('.quest-post')
        .evaluateAll((cards) => cards.map((c) => c.getAttribute('data-post-id'))),
    ).toEqual([String(second.id), String(first.id)]);
    await expectShownOnce(page, first.id, 1);
    await expectShownOnce(page, second.id, 0);
    expect(pageErrors).toEqual([]);
  });
});
