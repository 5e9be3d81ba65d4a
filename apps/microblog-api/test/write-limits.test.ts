/**
 * The write limits (issue 21): a budget per browser (the panel's signed client id cookie), a much
 * higher ceiling per address for all its browsers (a classroom behind one router), and a stricter
 * budget per address for writes without a valid client id (scripts, curl, forged cookies).
 *
 * Over real HTTP (`fetch` against `startTestServer()`): every request comes from 127.0.0.1, so all
 * the "browsers" here sit behind one address, as a class behind its school's router does. Replicas sharing
 * one Redis: write-limits.system.test.ts (it needs the machine's Redis).
 */
import { randomUUID } from 'node:crypto';
import { sign } from '@fastify/cookie';
import { loadConfig, WRITE_LIMIT_DEFAULTS } from '../src/config';
import { CLIENT_ID_COOKIE, CLIENT_ID_MAX_AGE_SECONDS } from '../src/plugins/app/client-id';
import { NO_WRITE_LIMITS } from './support/app';
import { startTestServer, type TestServer } from './support/server';

jest.setTimeout(120_000);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every write limit at its default, in a window of `windowSeconds`. */
const defaultLimits = (windowSeconds = 60) => ({
  WRITE_LIMIT_PER_CLIENT: '',
  WRITE_LIMIT_PER_ADDRESS: '',
  WRITE_LIMIT_WITHOUT_CLIENT_ID: '',
  WRITE_LIMIT_WINDOW_SECONDS: String(windowSeconds),
});

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(env: Record<string, string>): Promise<TestServer> {
  server = await startTestServer({}, env);
  return server;
}

/** Loads the panel as a browser's first visit does and answers the cookie it was given (`name=value`). */
async function firstVisit(base: string, cookie?: string): Promise<{ cookie?: string; setCookie?: string }> {
  const response = await fetch(`${base}/`, { headers: cookie ? { cookie } : {} });
  expect(response.status).toBe(200);
  await response.text();
  const setCookie = response.headers.getSetCookie().find((c) => c.startsWith(`${CLIENT_ID_COOKIE}=`));
  return { setCookie, cookie: setCookie?.split(';')[0] };
}

async function newClientId(base: string): Promise<string> {
  const { cookie } = await firstVisit(base);
  if (!cookie) throw new Error('the panel set no client id');
  return cookie;
}

interface WriteOutcome {
  status: number;
  retryAfter: string | null;
  contentType: string | null;
  body: { status?: number; title?: string; detail?: string };
}

async function write(
  base: string,
  path: '/api/microblog' | '/api/microblog/reply' | '/api/microblog/reaction',
  payload: unknown,
  cookie?: string,
): Promise<WriteOutcome> {
  const response = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(cookie ? { cookie } : {}) },
    body: JSON.stringify(payload),
  });
  return {
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    contentType: response.headers.get('content-type'),
    body: (await response.json()) as WriteOutcome['body'],
  };
}

const post = (base: string, cookie?: string, content = 'My quest post') =>
  write(base, '/api/microblog', { content, quest_topic: 'online_safety', student_name: 'Ada' }, cookie);
const like = (base: string, postId: number, cookie?: string) =>
  write(base, '/api/microblog/reaction', { post_id: postId, reaction_type: 'like' }, cookie);

/** A 429 in the service's format, whose Retry-After is within the window and whose detail names `scope`. */
function expectThrottled(outcome: WriteOutcome, scope: RegExp, windowSeconds: number) {
  expect(outcome.status).toBe(429);
  expect(outcome.contentType).toMatch(/^application\/problem\+json/);
  expect(outcome.body).toMatchObject({ status: 429, title: 'Too Many Requests' });
  expect(outcome.body.detail).toMatch(scope);
  const retryAfter = Number(outcome.retryAfter);
  expect(Number.isInteger(retryAfter)).toBe(true);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(windowSeconds);
}

const BROWSER = /from this browser/;
const ADDRESS_CEILING = /from this network address/;
const WITHOUT_ID = /without the panel’s client id/;

// ------------------------------------------------------------------------------------------------

describe('the client id cookie', () => {
  test('the first load of the panel sets a signed, HttpOnly, SameSite=Lax, long-lived client id; later loads keep it', async () => {
    const { baseUrl } = await start(NO_WRITE_LIMITS);
    const first = await firstVisit(baseUrl);
    expect(first.setCookie).toBeDefined();
    const attributes = first.setCookie!.split(';').map((a) => a.trim().toLowerCase());
    expect(attributes).toEqual(
      expect.arrayContaining(['httponly', 'samesite=lax', 'path=/', `max-age=${CLIENT_ID_MAX_AGE_SECONDS}`]),
    );
    // Plain HTTP here: Secure is added only when the browser came over HTTPS.
    expect(attributes).not.toContain('secure');
    expect(CLIENT_ID_MAX_AGE_SECONDS).toBeGreaterThanOrEqual(365 * 24 * 60 * 60);
    // <uuid>.<HMAC-SHA256 signature, base64, URL-encoded>
    expect(first.cookie).toMatch(new RegExp(`^${CLIENT_ID_COOKIE}=[0-9a-f-]{36}\\.[A-Za-z0-9%]{43,}$`));

    // a browser that has one keeps it; another browser gets its own
    expect((await firstVisit(baseUrl, first.cookie)).setCookie).toBeUndefined();
    const other = await firstVisit(baseUrl);
    expect(other.cookie).toBeDefined();
    expect(other.cookie).not.toBe(first.cookie);

    // a shared cache (a school proxy) must not hand one browser's page, or id, to another
    const page = await fetch(`${baseUrl}/`);
    expect(page.headers.get('cache-control')).toBe('private, no-cache');
    await page.text();
  });

  test('a forged, unsigned or foreign-signed cookie is replaced on the next load of the panel', async () => {
    const { baseUrl } = await start(NO_WRITE_LIMITS);
    const genuine = await newClientId(baseUrl);
    const id = genuine.split('=')[1].split('.')[0];
    for (const forged of [
      `${CLIENT_ID_COOKIE}=${id}`,
      `${CLIENT_ID_COOKIE}=${id}.${'A'.repeat(43)}`,
      `${CLIENT_ID_COOKIE}=${sign(randomUUID(), 'a key of somebody else, not this service')}`,
      `${CLIENT_ID_COOKIE}=${sign('not-a-uuid', 'x')}`,
    ]) {
      const visit = await firstVisit(baseUrl, forged);
      expect(visit.cookie).toBeDefined();
      expect(visit.cookie).not.toBe(forged);
    }
  });
});

describe('budgets', () => {
  const SMALL = {
    WRITE_LIMIT_PER_CLIENT: '3',
    WRITE_LIMIT_PER_ADDRESS: '7',
    WRITE_LIMIT_WITHOUT_CLIENT_ID: '2',
    WRITE_LIMIT_WINDOW_SECONDS: '60',
  };

  test('each browser has its own budget; writes without a client id have theirs', async () => {
    const { baseUrl } = await start(SMALL);
    const ada = await newClientId(baseUrl);
    const ben = await newClientId(baseUrl);
    const created = await post(baseUrl, ada);
    expect(created.status).toBe(201);
    const postId = (created.body as { id?: number }).id!;
    expect((await like(baseUrl, postId, ada)).status).toBe(200);
    expect((await like(baseUrl, postId, ada)).status).toBe(200);
    // Ada's fourth write: her browser's budget (3) is spent
    expectThrottled(await like(baseUrl, postId, ada), BROWSER, 60);
    // Ben, behind the same address, is not affected; nor is a script without a client id
    expect((await like(baseUrl, postId, ben)).status).toBe(200);
    expect((await like(baseUrl, postId)).status).toBe(200);
    expect((await like(baseUrl, postId)).status).toBe(200);
    expectThrottled(await like(baseUrl, postId), WITHOUT_ID, 60);
    // Ben's budget is untouched by the script's
    expect((await like(baseUrl, postId, ben)).status).toBe(200);
  });

  test('a forged cookie is no client id: its writes count against the budget without one', async () => {
    const { baseUrl } = await start(SMALL);
    const genuine = await newClientId(baseUrl);
    const id = genuine.split('=')[1].split('.')[0];
    const created = await post(baseUrl, genuine);
    const postId = (created.body as { id?: number }).id!;
    const forgeries = [
      `${CLIENT_ID_COOKIE}=${randomUUID()}`,
      `${CLIENT_ID_COOKIE}=${sign(randomUUID(), 'a key of somebody else, not this service')}`,
      `${CLIENT_ID_COOKIE}=${id}.${'A'.repeat(43)}`,
    ];
    // Each forgery would have a fresh browser budget of 3 if it were taken for a client id.
    expect((await like(baseUrl, postId, forgeries[0])).status).toBe(200);
    expect((await like(baseUrl, postId, forgeries[1])).status).toBe(200);
    expectThrottled(await like(baseUrl, postId, forgeries[2]), WITHOUT_ID, 60);
    expectThrottled(await like(baseUrl, postId), WITHOUT_ID, 60);
    // the genuine browser still has its own budget (1 of 3 spent)
    expect((await like(baseUrl, postId, genuine)).status).toBe(200);
  });

  test('the ceiling of an address covers all its browsers together', async () => {
    const { baseUrl } = await start(SMALL);
    const browsers = await Promise.all(Array.from({ length: 3 }, () => newClientId(baseUrl)));
    const created = await post(baseUrl, browsers[0]);
    const postId = (created.body as { id?: number }).id!;
    // 1 + 1 + 2 + 2 + 1 = 7 writes of four browsers, each under its own budget of 3: the ceiling is full
    for (const browser of [browsers[0], browsers[1], browsers[1], browsers[2], browsers[2]])
      expect((await like(baseUrl, postId, browser)).status).toBe(200);
    expect((await like(baseUrl, postId, await newClientId(baseUrl))).status).toBe(200);
    // browsers[0] has 1 of its 3 left, but the address has none
    expectThrottled(await like(baseUrl, postId, browsers[0]), ADDRESS_CEILING, 60);
    // writes without a client id have their own budget, apart from the ceiling
    expect((await like(baseUrl, postId)).status).toBe(200);
  });

  test('WRITE_RATE_LIMIT, the former name, still sets the budget without a client id', () => {
    const config = loadConfig({ WRITE_RATE_LIMIT: '10' });
    expect(config.writeLimits).toEqual({
      perClient: WRITE_LIMIT_DEFAULTS.perClient,
      perAddress: WRITE_LIMIT_DEFAULTS.perAddress,
      withoutClientId: 10,
      windowMs: 60_000,
    });
    expect(
      loadConfig({ WRITE_RATE_LIMIT: '10', WRITE_LIMIT_WITHOUT_CLIENT_ID: '4' }).writeLimits.withoutClientId,
    ).toBe(4);
    expect(loadConfig({}).writeLimits).toEqual({
      perClient: 60,
      perAddress: 1200,
      withoutClientId: 30,
      windowMs: 60_000,
    });
    expect(() => loadConfig({ WRITE_LIMIT_PER_CLIENT: '0' })).toThrow(/WRITE_LIMIT_PER_CLIENT/);
  });
});

// ------------------------------------------------------------------------------------------------

/**
 * A lesson, with the default budgets. Time is compressed honestly: the limiter counts writes per
 * fixed window, so the window is scaled from 60 s to WINDOW_SECONDS and every pause of the lesson by
 * the same factor; each window then sees the writes of one lesson minute, against the same budgets.
 * Pauses come after each write's answer, so a slow machine only spreads the writes out (it never
 * crowds more of them into a window than the lesson's pace does).
 */
describe('a lesson: thirty browsers behind one address, default budgets', () => {
  const WINDOW_SECONDS = 4;
  const MINUTE_MS = WINDOW_SECONDS * 1000;
  const STUDENTS = 30;
  /**
   * One student's lesson, minute by minute: posts, replies, reactions. Busier than a real lesson
   * (everyone at once, from the first minute): 3 posts, 5 replies and 46 reactions in 5 minutes.
   */
  const LESSON: { posts: number; replies: number; reactions: number }[] = [
    { posts: 1, replies: 0, reactions: 12 },
    { posts: 0, replies: 3, reactions: 10 },
    { posts: 1, replies: 0, reactions: 10 },
    { posts: 0, replies: 2, reactions: 8 },
    { posts: 1, replies: 0, reactions: 6 },
  ];
  const KINDS = ['like', 'love', 'celebrate', 'insightful', 'support'] as const;

  test('five minutes of posting and liking never meet a 429; a script without a client id flooding meanwhile is stopped', async () => {
    const { baseUrl } = await start(defaultLimits(WINDOW_SECONDS));
    const posts: number[] = [];
    const statuses = new Map<number, number>();
    const count = (status: number) => statuses.set(status, (statuses.get(status) ?? 0) + 1);
    const pick = <T>(items: readonly T[]) => items[Math.floor(Math.random() * items.length)];

    async function student(n: number) {
      const cookie = await newClientId(baseUrl);
      await sleep(Math.random() * MINUTE_MS * 0.1);
      for (const minute of LESSON) {
        const actions = [
          ...Array<'post'>(minute.posts).fill('post'),
          ...Array<'reply' | 'react'>(minute.replies).fill('reply'),
          ...Array<'react'>(minute.reactions).fill('react'),
        ];
        const pause = MINUTE_MS / actions.length;
        for (const action of actions) {
          const started = Date.now();
          let outcome: WriteOutcome;
          if (action === 'post' || posts.length === 0) {
            outcome = await post(baseUrl, cookie, `Student ${n}: think before you share`);
            if (outcome.status === 201) posts.push((outcome.body as { id: number }).id);
          } else if (action === 'reply') {
            outcome = await write(
              baseUrl,
              '/api/microblog/reply',
              { post_id: pick(posts), content: 'Agreed!' },
              cookie,
            );
          } else {
            outcome = await write(
              baseUrl,
              '/api/microblog/reaction',
              { post_id: pick(posts), reaction_type: pick(KINDS) },
              cookie,
            );
          }
          count(outcome.status);
          await sleep(Math.max(0, pause - (Date.now() - started)) * (0.5 + Math.random()));
        }
      }
    }

    // The script: no client id, a write every 20 ms (200 per window against a budget of 30).
    let lessonOver = false;
    const script = { accepted: 0, throttled: [] as WriteOutcome[] };
    async function flood() {
      const created = await post(baseUrl, undefined, 'spam');
      expect(created.status).toBe(201);
      script.accepted += 1;
      while (!lessonOver) {
        const outcome = await like(baseUrl, (created.body as { id: number }).id);
        if (outcome.status === 200) script.accepted += 1;
        else script.throttled.push(outcome);
        await sleep(20);
      }
    }

    const started = Date.now();
    const flooding = flood();
    await Promise.all(Array.from({ length: STUDENTS }, (_, n) => student(n)));
    lessonOver = true;
    await flooding;
    const windows = Math.ceil((Date.now() - started) / MINUTE_MS) + 1;

    const writes = LESSON.reduce((sum, m) => sum + m.posts + m.replies + m.reactions, 0) * STUDENTS;
    expect(statuses.get(429) ?? 0).toBe(0);
    // every write of the lesson landed (201 for posts and replies, 200 for reactions)
    expect((statuses.get(201) ?? 0) + (statuses.get(200) ?? 0)).toBe(writes);
    // the script was stopped: at most its budget per window got through, the rest were 429s
    expect(script.throttled.length).toBeGreaterThan(0);
    expect(script.accepted).toBeLessThanOrEqual(WRITE_LIMIT_DEFAULTS.withoutClientId * windows);
    for (const outcome of script.throttled) expectThrottled(outcome, WITHOUT_ID, WINDOW_SECONDS);
  });
});

describe('a script rotating fresh client ids', () => {
  test('is stopped by the ceiling of its address (default budgets, a real minute)', async () => {
    const { baseUrl } = await start(defaultLimits());
    const target = await post(baseUrl, await newClientId(baseUrl));
    expect(target.status).toBe(201);
    const postId = (target.body as { id: number }).id;
    // Each fresh id (a new first load of the panel) writes just under a browser's budget.
    const PER_ID = WRITE_LIMIT_DEFAULTS.perClient - 1;
    let accepted = 1;
    let stoppedBy: WriteOutcome | undefined;
    while (!stoppedBy && accepted <= WRITE_LIMIT_DEFAULTS.perAddress + PER_ID) {
      const cookie = await newClientId(baseUrl);
      // ten at a time, as a script that does not wait would send them
      for (let sent = 0; sent < PER_ID && !stoppedBy; sent += 10) {
        const batch = await Promise.all(
          Array.from({ length: Math.min(10, PER_ID - sent) }, () => like(baseUrl, postId, cookie)),
        );
        for (const outcome of batch)
          if (outcome.status === 200) accepted += 1;
          else stoppedBy ??= outcome;
      }
    }
    expect(stoppedBy).toBeDefined();
    expectThrottled(stoppedBy!, ADDRESS_CEILING, 60);
    expect(accepted).toBe(WRITE_LIMIT_DEFAULTS.perAddress);
  });
});

// ------------------------------------------------------------------------------------------------

describe('the OpenAPI document', () => {
  test('documents Retry-After on every write’s 429 and the client id cookie of the panel', async () => {
    const { baseUrl } = await start(NO_WRITE_LIMITS);
    const doc = (await (await fetch(`${baseUrl}/docs/json`)).json()) as {
      info: { description: string };
      paths: Record<
        string,
        Record<string, { responses: Record<string, { headers?: Record<string, unknown> }> }>
      >;
    };
    for (const path of ['/api/microblog', '/api/microblog/reply', '/api/microblog/reaction'])
      expect(doc.paths[path].post.responses['429'].headers).toHaveProperty('Retry-After');
    expect(doc.paths['/'].get.responses['200'].headers).toHaveProperty('Set-Cookie');
    for (const variable of [
      'WRITE_LIMIT_PER_CLIENT',
      'WRITE_LIMIT_PER_ADDRESS',
      'WRITE_LIMIT_WITHOUT_CLIENT_ID',
    ])
      expect(doc.info.description).toContain(variable);
    expect(doc.info.description).toContain(CLIENT_ID_COOKIE);
  });
});
