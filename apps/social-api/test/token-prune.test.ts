/**
 * Ended token pairs are forgotten on a timer (#21), not only at logins: an account that only
 * refreshes adds a row per refresh, and the table must not grow without bound. Real app, real
 * database, the app's own timer (TOKEN_PRUNE_SECONDS=1); the test clock moves past the day ended
 * pairs are kept (so a replayed refresh token is still recognised until then).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { buildTestApp, type TestApp } from './support/app';

let t: TestApp;
afterEach(() => t?.close());

const DAY_MS = 86_400_000;

test('pairs a refresh loop left behind are pruned by the timer (a login prunes only one batch); live pairs stay', async () => {
  t = await buildTestApp({ TOKEN_PRUNE_SECONDS: '1', TOKEN_PRUNE_BATCH: '3', REFRESH_TOKEN_IN_BODY: 'true' });
  const looping = await t.register({ username: 'looping', password: 'looping-pw' });
  let pair = (await t.login(looping.username, looping.password)).json();
  for (let i = 0; i < 8; i += 1) {
    const refreshed = await t.app.inject({
      method: 'PUT',
      url: '/api/tokens',
      payload: { access_token: pair.access_token, refresh_token: pair.refresh_token },
    });
    expect(refreshed.statusCode).toBe(200);
    pair = refreshed.json();
  }
  const loopRows = await t.countRows('tokens', (q) => q.where('user_id', '=', looping.id));
  expect(loopRows).toBe(10);

  // Eight days on: every pair of the loop ended more than a day ago (refresh tokens last 7 days).
  t.clock.advance(8 * DAY_MS + 60_000);
  // A login also prunes, one batch (3): the rest is left to the timer.
  const fresh = await t.register({ username: 'fresh', password: 'fresh-pw' });
  expect(await t.countRows('tokens', (q) => q.where('user_id', '=', looping.id))).toBe(7);
  await sleep(2_500);
  expect(await t.countRows('tokens', (q) => q.where('user_id', '=', looping.id))).toBe(0);
  expect(await t.countRows('tokens', (q) => q.where('user_id', '=', fresh.id))).toBeGreaterThanOrEqual(1);
  expect((await t.as(fresh.token, { url: '/api/me' })).statusCode).toBe(200);
});

test('one prune run deletes at most ten batches (bounded work per run)', async () => {
  t = await buildTestApp({
    TOKEN_PRUNE_SECONDS: '3600',
    TOKEN_PRUNE_BATCH: '1',
    REFRESH_TOKEN_IN_BODY: 'true',
  });
  const user = await t.register({ username: 'many', password: 'many-pw' });
  for (let i = 0; i < 12; i += 1) expect((await t.login(user.username, user.password)).statusCode).toBe(200);
  expect(await t.countRows('tokens')).toBe(13);
  t.clock.advance(8 * DAY_MS + 60_000);
  expect(await t.app.tokens.prune()).toBe(10);
  expect(await t.countRows('tokens')).toBe(3);
  expect(await t.app.tokens.prune()).toBe(3);
  expect(await t.countRows('tokens')).toBe(0);
});
