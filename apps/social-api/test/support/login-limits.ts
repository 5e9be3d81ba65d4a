import { basic, type TestApp } from './app';

/**
 * What the abuse-limit tests share (#11, #21): the clients they play, limits that stay out of the
 * way of the set-up, a login from a given address, and the answer of a throttled form.
 */

/** A client guessing passwords. */
export const ATTACKER = '198.51.100.7';
/** The account's owner, from an address of their own. */
export const OWNER = '203.0.113.20';

/** Failed-login limits high enough for the set-up, low where a test looks (`overrides`). */
export const loginLimits = (overrides: Record<string, string> = {}) => ({
  LOGIN_FAILURES_PER_ADDRESS: '1000',
  LOGIN_FAILURES_PER_ACCOUNT: '1000',
  LOGIN_FAILURES_PER_ACCOUNT_ANYWHERE: '1000',
  ...overrides,
});

/** `POST /api/tokens` with Basic credentials, from the client address `address`. */
export const loginFrom = (t: TestApp, address: string, name: string, password: string) =>
  t.app.inject({
    method: 'POST',
    url: '/api/tokens',
    remoteAddress: address,
    headers: { authorization: basic(name, password) },
  });

/** `count` wrong passwords for `name` from `address` (`<wrong>0`, `<wrong>1`, …): each an ordinary 401. */
export async function failLogins(t: TestApp, address: string, name: string, count: number, wrong = 'guess') {
  for (let i = 0; i < count; i += 1)
    expect((await loginFrom(t, address, name, `${wrong}${i}`)).statusCode).toBe(401);
}

/** An answer, from inject or a server. */
export type Answer = { statusCode: number; headers: Record<string, unknown>; json(): any };

/**
 * A throttled form's answer: 429, `Retry-After`, werkzeug's body and (#21) one sentence on
 * `errors.json.<field>` saying when to try again: "Too many <what>: try again in …" (any `what`
 * unless given). The seconds of `Retry-After`.
 */
export function expectTooMany(res: Answer, field: string, what = '.+'): number {
  expect(res.statusCode).toBe(429);
  const sentence = new RegExp(`^Too many ${what}: try again in \\d+ (second|minute|hour)s?\\.$`);
  expect(res.json()).toEqual({
    code: 429,
    message: 'Too Many Requests',
    description: 'This user has exceeded an allotted request count. Try again later.',
    errors: { json: { [field]: [expect.stringMatching(sentence)] } },
  });
  const retryAfter = Number(res.headers['retry-after']);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(res.headers['x-content-type-options']).toBe('nosniff');
  return retryAfter;
}
