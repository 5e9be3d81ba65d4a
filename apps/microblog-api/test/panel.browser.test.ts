/**
 * Browser test of the panel served at GET / (public/index.html, panel.js, panel.css), driven through
 * headless Chromium (Debian's /usr/bin/chromium or $CHROMIUM_PATH) with playwright-core, against the
 * real service (startTestServer: real app, real database, random port on 127.0.0.1).
 *
 * Every test gets its own server (a fresh database), its own browser context, and ends with
 * `expectCleanPage()`: no uncaught page errors, no console errors (except the "Failed to load
 * resource" line Chromium prints for an HTTP error the test provokes on purpose, and the browser's
 * own /favicon.ico probe), and no request that left the service's origin.
 */
import { launchChromium } from '@platform/testing';
import { type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { QUEST_TOPICS, type Post } from '../src/posts/schemas';
import { startTestServer } from './support/server';

jest.setTimeout(60_000);

type TestServer = Awaited<ReturnType<typeof startTestServer>>;

interface PageWatch {
  pageErrors: string[];
  consoleErrors: string[];
  requests: string[];
  /** console errors matching one of these are expected (an HTTP error the test provoked) */
  allowedConsoleErrors: RegExp[];
}

let browser: Browser;
let server: TestServer | undefined;
let context: BrowserContext | undefined;
let page: Page;
let watch: PageWatch;

beforeAll(async () => {
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
});

beforeEach(async () => {
  server = await startTestServer();
  context = await browser.newContext();
  context.setDefaultTimeout(15_000);
  page = await context.newPage();
  watch = { pageErrors: [], consoleErrors: [], requests: [], allowedConsoleErrors: [] };
  page.on('pageerror', (error) => watch.pageErrors.push(String(error)));
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    // Chromium fetches /favicon.ico on its own (not the panel's doing); the service has none, so a
    // 404 for it is not a page error.
    if (message.location().url === `${baseUrl()}/favicon.ico`) return;
    watch.consoleErrors.push(message.text());
  });
  page.on('request', (request) => watch.requests.push(request.url()));
});

afterEach(async () => {
  await context?.close();
  context = undefined;
  await server?.close();
  server = undefined;
});

// ------------------------------------------------------------------ helpers

function baseUrl(): string {
  if (!server) throw new Error('no test server');
  return server.baseUrl;
}

function uniqueMarker(label: string): string {
  return `${label}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}

/** Retries `check` until it stops throwing (messages vanish after 5 s, so poll rather than sleep). */
async function eventually<T>(check: () => Promise<T> | T, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

async function expectText(locator: Locator, expected: string, timeoutMs?: number): Promise<void> {
  await eventually(async () => {
    expect(((await locator.textContent()) ?? '').trim()).toBe(expected);
  }, timeoutMs);
}

async function apiList(): Promise<Post[]> {
  const response = await fetch(`${baseUrl()}/api/microblog`);
  expect(response.status).toBe(200);
  const body = (await response.json()) as Post[];
  expect(Array.isArray(body)).toBe(true);
  return body;
}

async function apiFindPost(content: string): Promise<Post> {
  const post = (await apiList()).find((p) => p.content === content);
  if (!post) throw new Error(`post ${JSON.stringify(content)} not found through the API`);
  return post;
}

async function apiCreatePost(
  content: string,
  studentName = 'Test Student',
  questTopic = 'digital_ethics',
): Promise<Post> {
  const response = await fetch(`${baseUrl()}/api/microblog`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ content, quest_topic: questTopic, student_name: studentName }),
  });
  expect(response.status).toBe(201);
  return (await response.json()) as Post;
}

async function openPanel(): Promise<void> {
  const response = await page.goto(`${baseUrl()}/`);
  expect(response?.status()).toBe(200);
  // the list has loaded once it is no longer busy
  await page.locator('#quest-posts-display:not([aria-busy])').waitFor({ state: 'attached' });
}

/** Runs `action` and answers the JSON body of the request it made the panel send to `path`. */
async function bodySentTo(path: string, action: () => Promise<unknown>): Promise<unknown> {
  const request = page.waitForRequest((r) => r.url().endsWith(path));
  await action();
  return JSON.parse((await request).postData() ?? 'null');
}

/** Fills a card's reply form (the name only when given), submits it and answers the body sent. */
async function submitReply(form: Locator, content: string, name?: string): Promise<unknown> {
  if (name !== undefined) await form.locator('.reply-name-input').fill(name);
  await form.locator('.reply-content-input').fill(content);
  return bodySentTo('/api/microblog/reply', () => form.locator('.reply-submit').click());
}

function card(text: string): Locator {
  return page.locator('.quest-post[data-post-id]', { hasText: text });
}

function messageBox(): Locator {
  return page.locator('#message-display');
}

function expectCleanPage(): void {
  const unexpectedConsole = watch.consoleErrors.filter(
    (text) => !watch.allowedConsoleErrors.some((pattern) => pattern.test(text)),
  );
  expect(watch.pageErrors).toEqual([]);
  expect(unexpectedConsole).toEqual([]);
  const offsite = watch.requests.filter(
    (url) => !url.startsWith(`${baseUrl()}/`) && !/^(data|blob):/.test(url),
  );
  expect(offsite).toEqual([]);
}

// ------------------------------------------------------------------ tests

describe('microblog panel (GET /) in Chromium', () => {
  it('shows the empty state, shares a post through the form and lists it', async () => {
    expect(await apiList()).toEqual([]);
    await openPanel();

    await expectText(
      page.locator('#quest-posts-display .empty-state'),
      'No quest posts yet. Be the first to share!',
    );
    expect(await page.locator('.quest-post').count()).toBe(0);

    // the form as the contract describes it
    const topicValues = await page
      .locator('#quest_topic option')
      .evaluateAll((options) => options.map((option) => option.getAttribute('value')));
    // a placeholder, then the API's topics (posts.test.ts pins them to the contract's)
    expect(topicValues).toEqual(['', ...QUEST_TOPICS]);
    for (const id of ['student_name', 'quest_topic', 'content']) {
      expect(await page.locator(`#${id}`).getAttribute('required')).not.toBeNull();
      expect(await page.locator(`label[for="${id}"]`).count()).toBe(1);
    }
    expect(await page.locator('#content').getAttribute('maxlength')).toBe('280');
    expect(await messageBox().getAttribute('aria-live')).toBe('polite');

    const content = `Think before you post: it stays online. ${uniqueMarker('first')}`;
    await page.fill('#student_name', 'Ada');
    await page.selectOption('#quest_topic', 'digital_footprint');
    await page.fill('#content', content);

    // hold the POST to observe the busy button, then let it through to the real server
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    await page.route('**/api/microblog', async (route) => {
      if (route.request().method() === 'POST') await gate;
      await route.fallback();
    });
    const postRequest = page.waitForRequest(
      (request) => request.method() === 'POST' && request.url() === `${baseUrl()}/api/microblog`,
    );
    const submit = page.locator('#quest-post-form [type="submit"]');
    await submit.click();
    const request = await postRequest;
    expect(request.headers()['content-type']).toBe('application/json');
    expect(JSON.parse(request.postData() ?? 'null')).toEqual({
      content,
      quest_topic: 'digital_footprint',
      student_name: 'Ada',
    });
    await expectText(submit, 'Sharing...');
    expect(await submit.isDisabled()).toBe(true);
    release();

    await expectText(messageBox(), 'Quest post shared successfully!');
    const newCard = card(content);
    await newCard.waitFor();
    expect(await submit.isDisabled()).toBe(false);
    expect(((await submit.textContent()) ?? '').trim()).toBe('Share quest post');
    // the form was reset
    expect(await page.inputValue('#student_name')).toBe('');
    expect(await page.inputValue('#quest_topic')).toBe('');
    expect(await page.inputValue('#content')).toBe('');

    // the server has it, raw
    const stored = await apiFindPost(content);
    expect(stored).toMatchObject({
      content,
      quest_topic: 'digital_footprint',
      student_name: 'Ada',
      reply_count: 0,
    });
    expect(await newCard.getAttribute('data-post-id')).toBe(String(stored.id));

    // the card shows name, topic label, content, time, reactions and the reply count
    expect(await newCard.locator('.post-author').textContent()).toBe('Ada');
    expect(await newCard.locator('.post-topic').textContent()).toBe('Digital Footprint');
    expect(await newCard.locator('.post-content').textContent()).toBe(content);
    expect(await newCard.locator('.post-time').getAttribute('datetime')).toBe(stored.timestamp);
    expect(((await newCard.locator('.post-time').textContent()) ?? '').length).toBeGreaterThan(0);
    expect(await newCard.locator('.like-button .reaction-count').textContent()).toBe('0');
    expect(await newCard.locator('.reply-count').textContent()).toBe('0 replies');
    expect(await page.locator('#quest-posts-display .empty-state').count()).toBe(0);
    expect(await page.locator('.quest-post').count()).toBe(1);

    // success messages hide themselves after 5 s
    await expectText(messageBox(), '', 9_000);
    expectCleanPage();
  });

  it('shows user text literally (escaped), never as markup', async () => {
    await openPanel();
    const marker = uniqueMarker('xss');
    const content = `<b>bold</b><script>x</script><img src="/x-${marker}" onerror="alert(1)"> ${marker}`;
    const name = '<i>Eve</i>';
    await page.fill('#student_name', name);
    await page.selectOption('#quest_topic', 'online_safety');
    await page.fill('#content', content);
    await page.click('#quest-post-form [type="submit"]');
    await expectText(messageBox(), 'Quest post shared successfully!');

    const newCard = card(marker);
    await newCard.waitFor();
    expect(await newCard.locator('.post-content').textContent()).toBe(content);
    expect(await newCard.locator('.post-author').textContent()).toBe(name);
    expect(await newCard.locator('b, script, img, i').count()).toBe(0);
    expect(await newCard.locator('.post-content').innerHTML()).toContain(
      '&lt;b&gt;bold&lt;/b&gt;&lt;script&gt;',
    );
    expect(await newCard.locator('.post-content').isVisible()).toBe(true);

    // stored and returned raw: the escaping is the panel's job
    const stored = await apiFindPost(content);
    expect(stored.student_name).toBe(name);
    expect(watch.requests.some((url) => url.includes(`x-${marker}`))).toBe(false);
    expectCleanPage();
  });

  it('Like adds one to the post and the card shows the count the server returned', async () => {
    const content = `Strong passwords matter ${uniqueMarker('like')}`;
    const created = await apiCreatePost(content, 'Ben', 'privacy_security');
    await openPanel();

    const postCard = page.locator(`.quest-post[data-post-id="${created.id}"]`);
    await postCard.waitFor();
    expect(await postCard.locator('.post-topic').textContent()).toBe('Privacy & Security');
    const likeCount = postCard.locator('.like-button .reaction-count');
    expect(await likeCount.textContent()).toBe('0');

    expect(
      await bodySentTo('/api/microblog/reaction', () => postCard.locator('.like-button').click()),
    ).toEqual({
      post_id: created.id,
      reaction_type: 'like',
    });
    await expectText(likeCount, '1');
    expect((await apiFindPost(content)).reactions.like).toBe(1);

    // another kind counts separately
    await postCard.locator('.reaction-button[data-reaction="celebrate"]').click();
    await expectText(postCard.locator('.reaction-button[data-reaction="celebrate"] .reaction-count'), '1');
    const after = await apiFindPost(content);
    expect(after.reactions).toEqual({ like: 1, love: 0, celebrate: 1, insightful: 0, support: 0 });
    expect(await likeCount.textContent()).toBe('1');
    expectCleanPage();
  });

  it('the per-post reply form adds a reply under the card and on the server', async () => {
    const content = `Ask before sharing a photo ${uniqueMarker('reply')}`;
    const created = await apiCreatePost(content, 'Cleo', 'digital_ethics');
    const other = await apiCreatePost(`Another post ${uniqueMarker('other')}`);
    await openPanel();

    const postCard = page.locator(`.quest-post[data-post-id="${created.id}"]`);
    await postCard.waitFor();
    const form = postCard.locator('form.reply-form');

    // a named reply
    const replyText = `Good point! ${uniqueMarker('r1')}`;
    expect(await submitReply(form, replyText, 'Sam')).toEqual({
      post_id: created.id,
      content: replyText,
      student_name: 'Sam',
    });
    const firstReply = postCard.locator('.reply', { hasText: replyText });
    await firstReply.waitFor();
    expect(await firstReply.locator('.reply-author').textContent()).toBe('Sam');
    expect(await firstReply.locator('.reply-content').textContent()).toBe(replyText);
    await expectText(postCard.locator('.reply-count'), '1 reply');
    expect(await form.locator('.reply-content-input').inputValue()).toBe('');

    // an anonymous reply: no student_name is sent, the panel shows "Anonymous"
    const anonymousText = `<em>me too</em> ${uniqueMarker('r2')}`;
    expect(await submitReply(form, anonymousText)).toEqual({
      post_id: created.id,
      content: anonymousText,
    });
    const secondReply = postCard.locator('.reply', { hasText: anonymousText });
    await secondReply.waitFor();
    expect(await secondReply.locator('.reply-author').textContent()).toBe('Anonymous');
    expect(await secondReply.locator('em').count()).toBe(0);
    await expectText(postCard.locator('.reply-count'), '2 replies');

    // the server has both, oldest first; the other post has none
    const stored = await apiFindPost(content);
    expect(stored.reply_count).toBe(2);
    expect(stored.replies.map((r) => [r.content, r.student_name, r.post_id])).toEqual([
      [replyText, 'Sam', created.id],
      [anonymousText, null, created.id],
    ]);
    expect((await apiList()).find((p) => p.id === other.id)?.reply_count).toBe(0);
    expect(await page.locator(`.quest-post[data-post-id="${other.id}"] .reply`).count()).toBe(0);

    // after a reload the replies come from the server
    await openPanel();
    await postCard.waitFor();
    expect(await postCard.locator('.reply').count()).toBe(2);
    expect(await postCard.locator('.reply-count').textContent()).toBe('2 replies');
    expectCleanPage();
  });

  it('a failed list load shows a friendly message and an empty list', async () => {
    await apiCreatePost(`Should not be shown ${uniqueMarker('hidden')}`);
    watch.allowedConsoleErrors.push(/Failed to load resource: the server responded with a status of 500/);
    await page.route('**/api/microblog', async (route) => {
      await route.fulfill({
        status: 500,
        contentType: 'application/problem+json',
        body: JSON.stringify({
          type: 'about:blank',
          title: 'Internal Server Error',
          status: 500,
          detail: 'database exploded',
        }),
      });
    });
    await page.goto(`${baseUrl()}/`);
    await expectText(messageBox(), 'Unable to load quest posts.');
    expect(await page.locator('.quest-post').count()).toBe(0);
    expect(await page.locator('#load-older-button').isVisible()).toBe(false);
    expectCleanPage();
  });

  it('a failed submit shows the server’s problem detail and keeps the form', async () => {
    await openPanel();
    const submit = page.locator('#quest-post-form [type="submit"]');

    // 1. a real 400 from the server: content that is only spaces passes the browser's `required`
    const invalid = { content: '    ', quest_topic: 'cyberbullying', student_name: 'Dana' };
    const direct = await fetch(`${baseUrl()}/api/microblog`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(invalid),
    });
    expect(direct.status).toBe(400);
    expect(direct.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const problem = (await direct.json()) as { detail?: string };
    expect(typeof problem.detail).toBe('string');

    watch.allowedConsoleErrors.push(
      /Failed to load resource: the server responded with a status of (400|429)/,
    );
    await page.fill('#student_name', invalid.student_name);
    await page.selectOption('#quest_topic', invalid.quest_topic);
    await page.fill('#content', invalid.content);
    await submit.click();
    await expectText(messageBox(), `Could not share your post: ${problem.detail}`);
    expect(await messageBox().getAttribute('class')).toContain('message-error');
    expect(await submit.isDisabled()).toBe(false);
    expect(await page.inputValue('#student_name')).toBe('Dana');

    // 2. a 429 (write rate limit) answered by a stubbed route
    const content = `Rate limited ${uniqueMarker('429')}`;
    const detail = 'Too many writes from this address: try again in 60 seconds.';
    await page.route('**/api/microblog', async (route) => {
      if (route.request().method() !== 'POST') return route.fallback();
      await route.fulfill({
        status: 429,
        headers: { 'retry-after': '60' },
        contentType: 'application/problem+json',
        body: JSON.stringify({ type: 'about:blank', title: 'Too Many Requests', status: 429, detail }),
      });
    });
    await page.fill('#content', content);
    await submit.click();
    await expectText(messageBox(), `Could not share your post: ${detail}`);
    expect(await page.inputValue('#content')).toBe(content);
    expect(((await submit.textContent()) ?? '').trim()).toBe('Share quest post');
    expect(await page.locator('.quest-post').count()).toBe(0);
    // the error stays up (only success messages auto-hide)
    expect(await apiList()).toEqual([]);
    expectCleanPage();
  });

  it('gets a signed, HttpOnly client id on first load, and its writes count against that browser’s budget', async () => {
    // This test's own server: a browser may write twice per window; the address and writes without
    // a client id have room to spare, so only the per-browser budget can refuse.
    await server?.close();
    server = await startTestServer(
      {},
      { WRITE_LIMIT_PER_CLIENT: '2', WRITE_LIMIT_PER_ADDRESS: '1000', WRITE_LIMIT_WITHOUT_CLIENT_ID: '1000' },
    );
    const created = await apiCreatePost(`Count my likes ${uniqueMarker('budget')}`);
    await openPanel();

    const cookies = await context!.cookies(baseUrl());
    const clientId = cookies.find((c) => c.name === 'microblog_client');
    expect(clientId).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/', secure: false });
    expect(clientId!.expires).toBeGreaterThan(Date.now() / 1000 + 365 * 24 * 60 * 60);
    // HttpOnly: the page's script cannot read it (the browser sends it with the panel's fetches)
    expect(await page.evaluate('document.cookie')).not.toContain('microblog_client');

    const postCard = page.locator(`.quest-post[data-post-id="${created.id}"]`);
    await postCard.waitFor();
    const reaction = (kind: string) => postCard.locator(`.reaction-button[data-reaction="${kind}"]`);
    const sent = page.waitForRequest((r) => r.url().endsWith('/api/microblog/reaction'));
    await reaction('like').click();
    expect(await (await sent).headerValue('cookie')).toBe(`microblog_client=${clientId!.value}`);
    await expectText(reaction('like').locator('.reaction-count'), '1');
    await reaction('celebrate').click();
    await expectText(reaction('celebrate').locator('.reaction-count'), '1');

    // the third write of this browser is over its budget: the panel shows the server's words
    watch.allowedConsoleErrors.push(/Failed to load resource: the server responded with a status of 429/);
    await reaction('love').click();
    await eventually(async () =>
      expect(((await messageBox().textContent()) ?? '').trim()).toMatch(
        /^Could not add your reaction: Too many writes from this browser: try again in \d+ seconds$/,
      ),
    );
    expect(await reaction('love').locator('.reaction-count').textContent()).toBe('0');

    // another browser behind the same address has its own budget
    const other = await browser.newContext();
    try {
      const otherPage = await other.newPage();
      await otherPage.goto(`${baseUrl()}/`);
      const otherCard = otherPage.locator(`.quest-post[data-post-id="${created.id}"]`);
      await otherCard.locator('.reaction-button[data-reaction="love"]').click();
      await eventually(async () =>
        expect(
          await otherCard.locator('.reaction-button[data-reaction="love"] .reaction-count').textContent(),
        ).toBe('1'),
      );
      const otherId = (await other.cookies(baseUrl())).find((c) => c.name === 'microblog_client');
      expect(otherId?.value).toBeDefined();
      expect(otherId?.value).not.toBe(clientId!.value);
    } finally {
      await other.close();
    }
    expect((await apiFindPost(created.content)).reactions).toMatchObject({ like: 1, celebrate: 1, love: 1 });
    expectCleanPage();
  });

  it('"Load older posts" follows the Link rel="next" header and appends', async () => {
    const first = await apiCreatePost(`Oldest ${uniqueMarker('p1')}`);
    const second = await apiCreatePost(`Middle ${uniqueMarker('p2')}`);
    const third = await apiCreatePost(`Newest ${uniqueMarker('p3')}`);
    // ask the real server for pages of 2 so that it sends a Link header
    await page.route('**/api/microblog', async (route) => {
      if (route.request().method() !== 'GET') return route.fallback();
      await route.fallback({ url: `${baseUrl()}/api/microblog?limit=2` });
    });
    await openPanel();
    const ids = async () =>
      page
        .locator('.quest-post')
        .evaluateAll((cards) => cards.map((c) => Number(c.getAttribute('data-post-id'))));
    expect(await ids()).toEqual([third.id, second.id]);
    const older = page.locator('#load-older-button');
    expect(await older.isVisible()).toBe(true);
    expect(((await older.textContent()) ?? '').trim()).toBe('Load older posts');

    const olderRequest = page.waitForRequest((request) => request.url().includes('before='));
    await older.click();
    const url = new URL((await olderRequest).url());
    expect(url.pathname).toBe('/api/microblog');
    expect(url.searchParams.get('before')).toBe(String(second.id));
    await eventually(async () => expect(await ids()).toEqual([third.id, second.id, first.id]));
    await eventually(async () => expect(await older.isVisible()).toBe(false));
    expectCleanPage();
  });

  it('/docs serves Swagger UI without leaving the service', async () => {
    const documentResponse = await fetch(`${baseUrl()}/docs/json`);
    expect(documentResponse.status).toBe(200);
    const openapi = (await documentResponse.json()) as { info?: { title?: string } };
    const title = openapi.info?.title ?? '';
    expect(title.length).toBeGreaterThan(0);

    const response = await page.goto(`${baseUrl()}/docs`);
    expect(response?.status()).toBe(200);
    await page.locator('.swagger-ui').first().waitFor();
    await page.locator('.swagger-ui .info .title', { hasText: title }).waitFor();
    expect(watch.requests.length).toBeGreaterThan(1);
    expectCleanPage();
  });
});
