import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { buildTestApp, type TestApp, type TestUser } from './support/app';
import { CONFLICT, expectJsonErrors, expectPlainBadRequest, NOT_FOUND, USER_KEYS } from './support/wire';

/**
 * Users, `/me` and follows, as the contract and the Flask backend define them: the User shape,
 * marshmallow's validation wording (the React client shows `errors.json.<field>`), uniqueness
 * under races, lookups by id or username, partial edits and password changes, follow/unfollow
 * with the client's empty JSON bodies, and the follower lists.
 */

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?Z$/;

const md5 = (text: string) => createHash('md5').update(text).digest('hex');

function expectNoSecrets(json: unknown) {
  expect(JSON.stringify(json)).not.toMatch(/"(password|password_hash|old_password)"/);
}

let t: TestApp;
let seq = 0;
/** A fresh, valid registration payload (unique name and address). */
const fresh = (overrides: Record<string, unknown> = {}) => {
  seq += 1;
  return { username: `member${seq}`, email: `member${seq}@example.com`, password: 'secret', ...overrides };
};

const register = (payload: unknown, headers: Record<string, string> = {}) =>
  t.app.inject({ method: 'POST', url: '/api/users', payload: payload as never, headers });
/** A registration that must pass (201): the set-up of a test about the ones after it. */
const registered = async (payload: Record<string, unknown>) =>
  expect((await register(payload)).statusCode).toBe(201);
const get = (token: string | null, url: string) => t.as(token, { method: 'GET', url });
const putMe = (token: string, payload: unknown) =>
  t.as(token, { method: 'PUT', url: '/api/me', payload: payload as never });
const follow = (token: string, id: number | string) =>
  t.as(token, { method: 'POST', url: `/api/me/following/${id}` });
const unfollow = (token: string, id: number | string) =>
  t.as(token, { method: 'DELETE', url: `/api/me/following/${id}` });

beforeAll(async () => {
  t = await buildTestApp();
});

afterAll(async () => {
  await t?.close();
});

describe('POST /api/users (registration)', () => {
  test('201 with the full User shape, no password, no Location header', async () => {
    const before = t.clock.now().getTime();
    const res = await register({
      username: 'john',
      email: 'john@example.com',
      password: 'dog',
      about_me: 'I am John',
    });
    expect(res.statusCode).toBe(201);
    expect(res.headers.location).toBeUndefined();
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const user = res.json();
    expect(Object.keys(user).sort()).toEqual(USER_KEYS);
    expect(user).toEqual({
      id: expect.any(Number),
      url: `/api/users/${user.id}`,
      username: 'john',
      email: 'john@example.com',
      has_password: true,
      avatar_url: 'https://www.gravatar.com/avatar/d4c74594d841139328695756648b6bd6?d=identicon',
      about_me: 'I am John',
      first_seen: expect.stringMatching(ISO_UTC),
      last_seen: expect.stringMatching(ISO_UTC),
      posts_url: `/api/users/${user.id}/posts`,
    });
    expect(Number.isInteger(user.id)).toBe(true);
    expectNoSecrets(user);
    const firstSeen = Date.parse(user.first_seen);
    expect(firstSeen).toBeGreaterThanOrEqual(before - 1);
    expect(firstSeen).toBeLessThanOrEqual(t.clock.now().getTime() + 1);
    expect(user.last_seen).toBe(user.first_seen);
    // Stored as an argon2id hash, never as given.
    const row = await t.storedUser(user.id);
    expect(row.password_hash).toMatch(/^\$argon2id\$/);
  });

  test('about_me is optional (null) and the avatar hashes the lower-cased address', async () => {
    const res = await register({ username: 'mixedcase', email: 'Mixed.Case@Example.COM', password: 'dog' });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({
      email: 'Mixed.Case@Example.COM',
      about_me: null,
      avatar_url: `https://www.gravatar.com/avatar/${md5('mixed.case@example.com')}?d=identicon`,
    });
  });

  test.each(['Émile', 'Ωmega', 'Zoë', 'abc', 'a'.repeat(64), 'a12', 'x_-.'])(
    'username %p is accepted',
    async (username) => {
      const res = await register(fresh({ username }));
      expect(res.statusCode).toBe(201);
      expect(res.json().username).toBe(username);
    },
  );

  test.each<[string, Record<string, unknown>, Record<string, string[]>]>([
    ['username too short', { username: 'ab' }, { username: ['Length must be between 3 and 64.'] }],
    ['username too long', { username: 'a'.repeat(65) }, { username: ['Length must be between 3 and 64.'] }],
    [
      'username starting with a digit',
      { username: '1abc' },
      { username: ['Username must start with a letter'] },
    ],
    [
      'username starting with an underscore',
      { username: '_abc' },
      { username: ['Username must start with a letter'] },
    ],
    [
      'username starting with a space',
      { username: ' abc' },
      { username: ['Username must start with a letter'] },
    ],
    ['null username', { username: null }, { username: ['Field may not be null.'] }],
    ['number username', { username: 12345 }, { username: ['Not a valid string.'] }],
    ['bad email', { email: 'not-an-email' }, { email: ['Not a valid email address.'] }],
    ['email without a domain', { email: 'someone@' }, { email: ['Not a valid email address.'] }],
    [
      'email longer than 120',
      { email: `${'a'.repeat(50)}@${'b'.repeat(60)}.example.com` },
      { email: ['Longer than maximum length 120.'] },
    ],
    ['password shorter than 3', { password: 'ab' }, { password: ['Shorter than minimum length 3.'] }],
    [
      'about_me longer than 140',
      { about_me: 'x'.repeat(141) },
      { about_me: ['Longer than maximum length 140.'] },
    ],
    ['unknown field', { foo: 'bar' }, { foo: ['Unknown field.'] }],
    ['dump-only id', { id: 7 }, { id: ['Unknown field.'] }],
    ['dump-only url', { url: '/api/users/7' }, { url: ['Unknown field.'] }],
    ['dump-only has_password', { has_password: true }, { has_password: ['Unknown field.'] }],
    // Names every object inherits: once a 500 (the error body was grouped in a plain object).
    ['unknown field named constructor', { constructor: 1 }, { constructor: ['Unknown field.'] }],
    ['unknown field named toString', { toString: 'x' }, { toString: ['Unknown field.'] }],
    [
      'unknown field named __defineGetter__',
      { __defineGetter__: 1 },
      { __defineGetter__: ['Unknown field.'] },
    ],
  ])('%s → 400 with exactly that message', async (_name, overrides, errors) => {
    const payload = fresh(overrides);
    const res = await register(payload);
    expectJsonErrors(res, errors);
    expect(
      await t.countRows('users', (q) => q.where(sql`lower(email)`, '=', String(payload.email).toLowerCase())),
    ).toBe(0);
  });

  test('about_me of exactly 140 characters, or null, is accepted', async () => {
    await registered(fresh({ about_me: 'x'.repeat(140) }));
    const res = await register(fresh({ about_me: null }));
    expect(res.statusCode).toBe(201);
    expect(res.json().about_me).toBeNull();
  });

  test.each<[string, Record<string, unknown>, Record<string, string[]>]>([
    [
      'missing fields',
      {},
      {
        username: ['Missing data for required field.'],
        email: ['Missing data for required field.'],
        password: ['Missing data for required field.'],
      },
    ],
    [
      'only a username',
      { username: 'lonely' },
      { email: ['Missing data for required field.'], password: ['Missing data for required field.'] },
    ],
    [
      'several fields failing at once',
      { username: '1abc', email: 'nope', password: 'x', about_me: 'y'.repeat(141), bogus: 1 },
      {
        username: ['Username must start with a letter'],
        email: ['Not a valid email address.'],
        password: ['Shorter than minimum length 3.'],
        about_me: ['Longer than maximum length 140.'],
        bogus: ['Unknown field.'],
      },
    ],
  ])('%s → every failing field reported', async (_name, payload, errors) => {
    expectJsonErrors(await register(payload), errors);
  });

  test('a username both too short and not starting with a letter → at least the length message', async () => {
    const res = await register(fresh({ username: '9' }));
    expect(res.statusCode).toBe(400);
    expect(Object.keys(res.json().errors.json)).toEqual(['username']);
    expect(res.json().errors.json.username).toContain('Length must be between 3 and 64.');
  });

  test('duplicate username → "Use a different username."', async () => {
    await registered({ username: 'dupname', email: 'dup1@example.com', password: 'dog' });
    expectJsonErrors(await register({ username: 'dupname', email: 'dup2@example.com', password: 'dog' }), {
      username: ['Use a different username.'],
    });
  });

  test('duplicate email, also in another case → "Use a different email."', async () => {
    await registered({ username: 'dupmail1', email: 'dupmail@example.com', password: 'dog' });
    expectJsonErrors(
      await register({ username: 'dupmail2', email: 'dupmail@example.com', password: 'dog' }),
      { email: ['Use a different email.'] },
    );
    expectJsonErrors(
      await register({ username: 'dupmail3', email: 'DupMail@EXAMPLE.com', password: 'dog' }),
      { email: ['Use a different email.'] },
    );
  });

  test('duplicate username and email together → both messages', async () => {
    expectJsonErrors(await register({ username: 'dupname', email: 'DUPMAIL@example.com', password: 'dog' }), {
      username: ['Use a different username.'],
      email: ['Use a different email.'],
    });
  });

  test("the unique checks run beside other fields' errors: every field's error comes back at once", async () => {
    await registered({ username: 'allatonce', email: 'allatonce@example.com', password: 'dog' });
    expectJsonErrors(
      await register({ username: '9abc', email: 'allatonce@example.com', password: 'x', extra: true }),
      {
        username: ['Username must start with a letter'],
        email: ['Use a different email.'],
        password: ['Shorter than minimum length 3.'],
        extra: ['Unknown field.'],
      },
    );
    expectJsonErrors(await register({ username: 'allatonce', email: 'nope', password: 'dog' }), {
      username: ['Use a different username.'],
      email: ['Not a valid email address.'],
    });
    // A body that is not an object checks nothing else.
    expectJsonErrors(await register([1]), { _schema: ['Invalid input type.'] });
  });

  test('malformed JSON → 400 without errors', async () => {
    const res = await register('{"username": "broken", ', { 'content-type': 'application/json' });
    expect(res.statusCode).toBe(400);
    const body = res.json();
    expect(body).toEqual({ code: 400, message: 'Bad Request', description: expect.any(String) });
    expect(await t.countRows('users', (q) => q.where('username', '=', 'broken'))).toBe(0);
  });

  test.each<[string, string | undefined, Record<string, string>]>([
    ['an empty JSON body', '', { 'content-type': 'application/json' }],
    ['no body at all', undefined, {}],
  ])('%s → 400 with the "Missing data" messages', async (_name, payload, headers) => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/users',
      headers,
      ...(payload === undefined ? {} : { payload }),
    });
    expectJsonErrors(res, {
      username: ['Missing data for required field.'],
      email: ['Missing data for required field.'],
      password: ['Missing data for required field.'],
    });
  });
});

describe('uniqueness under concurrency (never a 500)', () => {
  test('20 concurrent registrations of one username → one 201, the rest "Use a different username.", one row', async () => {
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        register({ username: 'racer', email: `racer${i}@example.com`, password: 'dog' }),
      ),
    );
    const statuses = responses.map((r) => r.statusCode);
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 400)).toHaveLength(19);
    for (const res of responses.filter((r) => r.statusCode === 400))
      expectJsonErrors(res, { username: ['Use a different username.'] });
    expect(await t.countRows('users', (q) => q.where('username', '=', 'racer'))).toBe(1);
  });

  test('20 concurrent registrations of one email (differing in case) → one 201, the rest "Use a different email.", one row', async () => {
    // 20 spellings of one address: each bit of i picks the case of one letter.
    const emails = Array.from({ length: 20 }, (_, i) =>
      [...'racemail']
        .map((c, bit) => (i & (1 << bit) ? c.toUpperCase() : c))
        .join('')
        .concat('@example.com'),
    );
    expect(new Set(emails).size).toBe(20);
    const responses = await Promise.all(
      emails.map((email, i) => register({ username: `mailracer${i}`, email, password: 'dog' })),
    );
    const statuses = responses.map((r) => r.statusCode);
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 400)).toHaveLength(19);
    for (const res of responses.filter((r) => r.statusCode === 400))
      expectJsonErrors(res, { email: ['Use a different email.'] });
    expect(await t.countRows('users', (q) => q.where(sql`lower(email)`, '=', 'racemail@example.com'))).toBe(
      1,
    );
  });

  test('two users renaming themselves to the same name at once → one 200, the other 400', async () => {
    const [a, b] = await t.registerEach('renamea', 'renameb');
    const responses = await Promise.all([
      putMe(a.token, { username: 'samename' }),
      putMe(b.token, { username: 'samename' }),
    ]);
    expect(responses.map((r) => r.statusCode).sort()).toEqual([200, 400]);
    expectJsonErrors(
      responses.find((r) => r.statusCode === 400)!,
      { username: ['Use a different username.'] },
    );
    expect(responses.find((r) => r.statusCode === 200)!.json().username).toBe('samename');
    expect(await t.countRows('users', (q) => q.where('username', '=', 'samename'))).toBe(1);
  });
});

describe('GET /api/users and /api/users/<id|username>', () => {
  let viewer: TestUser;
  let others: TestUser[];

  beforeAll(async () => {
    viewer = await t.register({ username: 'viewer' });
    others = await t.registerEach('zed', 'amy');
  });

  test('the list is ordered by id in the Paginated envelope, with no password anywhere', async () => {
    const total = await t.countRows('users');
    const seen: { id: number }[] = [];
    for (let offset = 0; offset < total; offset += 25) {
      const res = await get(viewer.token, `/api/users?offset=${offset}`);
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(Object.keys(body).sort()).toEqual(['data', 'pagination']);
      expect(body.pagination).toEqual({ limit: 25, offset, count: Math.min(25, total - offset), total });
      for (const user of body.data) expect(Object.keys(user).sort()).toEqual(USER_KEYS);
      expectNoSecrets(body);
      seen.push(...body.data);
    }
    const ids = seen.map((u) => u.id);
    expect(ids).toHaveLength(total);
    expect(ids).toEqual([...ids].sort((x, y) => x - y));
    // Registered later → listed later, whatever the names.
    expect(ids.indexOf(others[0].id)).toBeGreaterThan(ids.indexOf(viewer.id));
    expect(ids.indexOf(others[1].id)).toBeGreaterThan(ids.indexOf(others[0].id));
  });

  test('the list needs a token (401 with the Bearer challenge)', async () => {
    const res = await get(null, '/api/users');
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer realm="Authentication Required"');
    expect(res.json()).toMatchObject({ code: 401, message: 'Unauthorized' });
  });

  test('a user by id and by username', async () => {
    const [zed] = others;
    const byId = await get(viewer.token, `/api/users/${zed.id}`);
    expect(byId.statusCode).toBe(200);
    expect(byId.json()).toMatchObject({
      id: zed.id,
      username: 'zed',
      email: zed.email,
      has_password: true,
      url: `/api/users/${zed.id}`,
    });
    expect(Object.keys(byId.json()).sort()).toEqual(USER_KEYS);
    const byName = await get(viewer.token, '/api/users/zed');
    expect(byName.statusCode).toBe(200);
    expect(byName.json()).toEqual(byId.json());
    const unicode = await get(viewer.token, `/api/users/${encodeURIComponent('Émile')}`);
    expect(unicode.statusCode).toBe(200);
    expect(unicode.json().username).toBe('Émile');
  });

  test.each([
    ['an unknown id', '/api/users/999999'],
    ['id 0', '/api/users/0'],
    ['an unknown username', '/api/users/nobody'],
    ['-1 (a username, not an id)', '/api/users/-1'],
    ['a huge id', '/api/users/99999999999999999999999'],
    ['an id just past int4', '/api/users/2147483648'],
    ['a trailing slash', '/api/users/'],
  ])('%s → 404 (never 500)', async (_name, url) => {
    const res = await get(viewer.token, url);
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual(NOT_FOUND);
  });

  test('a user by id needs a token', async () => {
    expect((await get(null, `/api/users/${viewer.id}`)).statusCode).toBe(401);
  });
});

describe('GET and PUT /api/me', () => {
  test('GET /api/me is the caller', async () => {
    const me = await t.register({ username: 'itsme', about_me: 'hello' });
    const res = await get(me.token, '/api/me');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      id: me.id,
      username: 'itsme',
      email: me.email,
      about_me: 'hello',
      has_password: true,
    });
    expect(Object.keys(res.json()).sort()).toEqual(USER_KEYS);
    expect((await get(null, '/api/me')).statusCode).toBe(401);
  });

  test('a partial edit (about_me only) changes only that', async () => {
    const me = await t.register({ username: 'partial', about_me: 'before' });
    const res = await putMe(me.token, { about_me: 'after' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id: me.id, username: 'partial', email: me.email, about_me: 'after' });
    expect((await get(me.token, '/api/me')).json().about_me).toBe('after');
  });

  test('echoing the unchanged username and email with about_me null → 200', async () => {
    const me = await t.register({ username: 'echoer', about_me: 'something' });
    const res = await putMe(me.token, { username: 'echoer', email: me.email, about_me: null });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ username: 'echoer', email: me.email, about_me: null });
  });

  test('own email in another case is allowed', async () => {
    const me = await t.register({ username: 'recaser' });
    const res = await putMe(me.token, { email: me.email.toUpperCase() });
    expect(res.statusCode).toBe(200);
    expect(res.json().email).toBe(me.email.toUpperCase());
  });

  test('{} → 200 and nothing changes', async () => {
    const me = await t.register({ username: 'nochange', about_me: 'same' });
    const before = (await get(me.token, '/api/me')).json();
    const res = await putMe(me.token, {});
    expect(res.statusCode).toBe(200);
    const { last_seen: _a, ...after } = res.json();
    const { last_seen: _b, ...expected } = before;
    expect(after).toEqual(expected);
  });

  test('new username and email, then someone else’s → the field message', async () => {
    const me = await t.register({ username: 'mover' });
    const other = await t.register({ username: 'taken' });
    const moved = await putMe(me.token, { username: 'moved', email: 'moved@example.com' });
    expect(moved.statusCode).toBe(200);
    expect(moved.json()).toMatchObject({
      username: 'moved',
      email: 'moved@example.com',
      avatar_url: `https://www.gravatar.com/avatar/${md5('moved@example.com')}?d=identicon`,
    });
    expectJsonErrors(await putMe(me.token, { username: 'taken' }), {
      username: ['Use a different username.'],
    });
    expectJsonErrors(await putMe(me.token, { email: other.email.toUpperCase() }), {
      email: ['Use a different email.'],
    });
    expectJsonErrors(await putMe(me.token, { username: 'taken', email: other.email }), {
      username: ['Use a different username.'],
      email: ['Use a different email.'],
    });
    expect((await get(me.token, '/api/me')).json()).toMatchObject({
      username: 'moved',
      email: 'moved@example.com',
    });
  });

  test("PUT /api/me: the unique and old_password checks run beside other fields' errors, all at once", async () => {
    const me = await t.register({ username: 'allchanges', password: 'first' });
    const other = await t.register({ username: 'alltaken' });
    expectJsonErrors(
      await putMe(me.token, { username: '9abc', email: other.email, password: 'x', extra: true }),
      {
        username: ['Username must start with a letter'],
        email: ['Use a different email.'],
        password: ['Shorter than minimum length 3.'],
        extra: ['Unknown field.'],
      },
    );
    expectJsonErrors(
      await putMe(me.token, { username: 'alltaken', about_me: 'z'.repeat(141), old_password: 'wrong' }),
      {
        username: ['Use a different username.'],
        about_me: ['Longer than maximum length 140.'],
        old_password: ['Password is incorrect'],
      },
    );
    expect((await get(me.token, '/api/me')).json()).toMatchObject({ username: 'allchanges' });
    expect((await t.login('allchanges', 'first')).statusCode).toBe(200);
  });

  test.each<[string, Record<string, unknown>, Record<string, string[]>]>([
    ['unknown field', { foo: 1 }, { foo: ['Unknown field.'] }],
    ['dump-only id', { id: 1 }, { id: ['Unknown field.'] }],
    ['username too short', { username: 'ab' }, { username: ['Length must be between 3 and 64.'] }],
    [
      'username not starting with a letter',
      { username: '0abc' },
      { username: ['Username must start with a letter'] },
    ],
    ['bad email', { email: 'nope' }, { email: ['Not a valid email address.'] }],
    ['about_me too long', { about_me: 'z'.repeat(141) }, { about_me: ['Longer than maximum length 140.'] }],
    [
      'password too short',
      { password: 'ab', old_password: 'password' },
      { password: ['Shorter than minimum length 3.'] },
    ],
  ])('PUT /api/me with %s → 400', async (_name, payload, errors) => {
    const me = await t.register();
    expectJsonErrors(await putMe(me.token, payload), errors);
  });

  test('password without old_password → plain 400 (no errors), password unchanged', async () => {
    const me = await t.register({ username: 'nooldpw', password: 'first' });
    expectPlainBadRequest(await putMe(me.token, { password: 'second' }));
    expect((await t.login('nooldpw', 'first')).statusCode).toBe(200);
    expect((await t.login('nooldpw', 'second')).statusCode).toBe(401);
  });

  test('a wrong old_password → errors.json.old_password, password unchanged', async () => {
    const me = await t.register({ username: 'wrongold', password: 'first' });
    expectJsonErrors(await putMe(me.token, { password: 'second', old_password: 'wrong' }), {
      old_password: ['Password is incorrect'],
    });
    expect((await t.login('wrongold', 'first')).statusCode).toBe(200);
    expect((await t.login('wrongold', 'second')).statusCode).toBe(401);
  });

  test('the correct old_password → 200; the old password stops working, the new one works', async () => {
    const me = await t.register({ username: 'changer', password: 'first' });
    const res = await putMe(me.token, { password: 'second', old_password: 'first' });
    expect(res.statusCode).toBe(200);
    expectNoSecrets(res.json());
    expect(res.json().has_password).toBe(true);
    const old = await t.login('changer', 'first');
    expect(old.statusCode).toBe(401);
    expect(old.headers['www-authenticate']).toBe('Form');
    expect((await t.login('changer', 'second')).statusCode).toBe(200);
  });

  test('a password change ends every other session; the one that made it keeps working', async () => {
    const me = await t.register({ username: 'sessions', password: 'first' });
    const other = await t.login('sessions', 'first');
    expect(other.statusCode).toBe(200);
    const otherToken = (other.json() as { access_token: string }).access_token;
    expect((await get(otherToken, '/api/me')).statusCode).toBe(200);
    const someoneElse = await t.register({ username: 'bystander', password: 'first' });

    expect((await putMe(me.token, { password: 'second', old_password: 'first' })).statusCode).toBe(200);

    const ended = await get(otherToken, '/api/me');
    expect(ended.statusCode).toBe(401);
    expect((await get(me.token, '/api/me')).statusCode).toBe(200);
    expect((await get(someoneElse.token, '/api/me')).statusCode).toBe(200);
    // A change that is not a password's ends nothing.
    const third = (await t.login('sessions', 'second')).json() as { access_token: string };
    expect((await putMe(me.token, { about_me: 'still here' })).statusCode).toBe(200);
    expect((await get(third.access_token, '/api/me')).statusCode).toBe(200);
  });

  test('a user without a password cannot set one through PUT /api/me', async () => {
    const now = t.clock.now();
    const row = await t.database.db
      .insertInto('users')
      .values({
        username: 'nopassword',
        email: 'nopassword@example.com',
        password_hash: null,
        first_seen: now,
        last_seen: now,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const { accessToken } = await t.app.tokens.issue(row.id);
    expect((await get(accessToken, '/api/me')).json()).toMatchObject({ id: row.id, has_password: false });
    expectJsonErrors(await putMe(accessToken, { password: 'newpass', old_password: 'anything' }), {
      old_password: ['Password is incorrect'],
    });
    expectPlainBadRequest(await putMe(accessToken, { password: 'newpass' }));
    expect((await get(accessToken, '/api/me')).json().has_password).toBe(false);
    expect((await t.login('nopassword', 'newpass')).statusCode).toBe(401);
  });
});

describe('follows', () => {
  let me: TestUser;
  let target: TestUser;

  beforeAll(async () => {
    me = await t.register({ username: 'follower' });
    target = await t.register({ username: 'followee' });
  });

  const isFollowing = (token: string, id: number | string) => get(token, `/api/me/following/${id}`);

  test('GET /api/me/following/<id>: 404 when not followed, 404 for no such user, 204 (empty) when followed', async () => {
    const notYet = await isFollowing(me.token, target.id);
    expect(notYet.statusCode).toBe(404);
    expect(notYet.json()).toEqual(NOT_FOUND);
    expect((await isFollowing(me.token, 999999)).statusCode).toBe(404);
    expect((await follow(me.token, target.id)).statusCode).toBe(204);
    const yes = await isFollowing(me.token, target.id);
    expect(yes.statusCode).toBe(204);
    expect(yes.body).toBe('');
    // Following is one-way.
    expect((await isFollowing(target.token, me.id)).statusCode).toBe(404);
    expect((await unfollow(me.token, target.id)).statusCode).toBe(204);
  });

  /** `change` (follow or unfollow) of the target: 204 (empty), again 409, an unknown user 404. */
  async function expectChangesOnce(change: typeof follow) {
    const first = await change(me.token, target.id);
    expect(first.statusCode).toBe(204);
    expect(first.body).toBe('');
    const again = await change(me.token, target.id);
    expect(again.statusCode).toBe(409);
    expect(again.json()).toEqual(CONFLICT);
    const unknown = await change(me.token, 999999);
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual(NOT_FOUND);
  }

  test('POST /api/me/following/<id>: 204, again 409, unknown user 404', async () => {
    await expectChangesOnce(follow);
    expect((await follow(me.token, 'abc')).statusCode).toBe(404);
    expect(
      await t.countRows('followers', (q) =>
        q.where('follower_id', '=', me.id).where('followed_id', '=', target.id),
      ),
    ).toBe(1);
  });

  test('DELETE /api/me/following/<id>: 204, again 409, unknown user 404', async () => {
    await expectChangesOnce(unfollow);
    expect((await isFollowing(me.token, target.id)).statusCode).toBe(404);
  });

  test('following yourself is allowed (204) and shows in both of your lists', async () => {
    const self = await t.register({ username: 'narcissus' });
    expect((await follow(self.token, self.id)).statusCode).toBe(204);
    expect((await isFollowing(self.token, self.id)).statusCode).toBe(204);
    expect((await get(self.token, '/api/me/following')).json().data.map((u: TestUser) => u.username)).toEqual(
      ['narcissus'],
    );
    expect((await get(self.token, '/api/me/followers')).json().data.map((u: TestUser) => u.username)).toEqual(
      ['narcissus'],
    );
  });

  test('the React client’s Content-Type: application/json with an EMPTY body works on POST and DELETE (204)', async () => {
    const client = { 'content-type': 'application/json' };
    // Following, then no longer following (the check's 204, then its 404).
    for (const [method, check] of [
      ['POST', 204],
      ['DELETE', 404],
    ] as const) {
      const res = await t.as(me.token, {
        method,
        url: `/api/me/following/${target.id}`,
        headers: client,
        payload: '',
      });
      expect(res.statusCode).toBe(204);
      expect(res.body).toBe('');
      expect((await isFollowing(me.token, target.id)).statusCode).toBe(check);
    }
  });

  describe('lists', () => {
    /** The ids of the users below, and the tokens of the two callers, by name. */
    const ids: Record<string, number> = {};
    const tokens: Record<string, string> = {};

    beforeAll(async () => {
      // Registered out of alphabetical order, so id order and username order differ.
      const [hub, carol, alice, bob] = await t.registerEach('hub', 'list_carol', 'list_alice', 'list_bob');
      for (const u of [carol, alice, bob]) expect((await follow(hub.token, u.id)).statusCode).toBe(204);
      for (const u of [bob, alice]) expect((await follow(u.token, hub.id)).statusCode).toBe(204);
      Object.assign(ids, { hub: hub.id, carol: carol.id, bob: bob.id });
      Object.assign(tokens, { hub: hub.token, list_carol: carol.token });
    });

    test.each<[string, (ids: Record<string, number>) => string, string, string[]]>([
      ['/api/me/following', () => '/api/me/following', 'hub', ['list_alice', 'list_bob', 'list_carol']],
      ['/api/me/followers', () => '/api/me/followers', 'hub', ['list_alice', 'list_bob']],
      [
        '/api/users/<hub>/following',
        (ids) => `/api/users/${ids.hub}/following`,
        'list_carol',
        ['list_alice', 'list_bob', 'list_carol'],
      ],
      [
        '/api/users/<hub>/followers',
        (ids) => `/api/users/${ids.hub}/followers`,
        'list_carol',
        ['list_alice', 'list_bob'],
      ],
      ['/api/users/<carol>/followers', (ids) => `/api/users/${ids.carol}/followers`, 'hub', ['hub']],
      ['/api/users/<carol>/following', (ids) => `/api/users/${ids.carol}/following`, 'hub', []],
      ['/api/users/<bob>/following', (ids) => `/api/users/${ids.bob}/following`, 'hub', ['hub']],
    ])('%s: ordered by username with the right total', async (_name, url, caller, expected) => {
      const res = await get(tokens[caller], url(ids));
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body.pagination).toEqual({
        limit: 25,
        offset: 0,
        count: expected.length,
        total: expected.length,
      });
      expect(body.data.map((u: { username: string }) => u.username)).toEqual(expected);
      for (const user of body.data) expect(Object.keys(user).sort()).toEqual(USER_KEYS);
      expectNoSecrets(body);
    });

    test.each([
      '/api/users/999999/following',
      '/api/users/999999/followers',
      '/api/users/abc/following',
      '/api/users/abc/followers',
      '/api/users/-1/followers',
      '/api/users/99999999999999999999/followers',
    ])('%s → 404', async (url) => {
      const res = await get(tokens.hub, url);
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual(NOT_FOUND);
    });

    test('the lists need a token', async () => {
      for (const url of [
        '/api/me/following',
        '/api/me/followers',
        `/api/users/${ids.hub}/following`,
        `/api/users/${ids.hub}/followers`,
      ]) {
        expect((await get(null, url)).statusCode).toBe(401);
      }
    });
  });

  test('20 concurrent follows of one user → one 204, the rest 409, one row', async () => {
    const fan = await t.register({ username: 'eagerfan' });
    const star = await t.register({ username: 'star' });
    const responses = await Promise.all(Array.from({ length: 20 }, () => follow(fan.token, star.id)));
    const statuses = responses.map((r) => r.statusCode);
    expect(statuses.filter((s) => s === 204)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(19);
    for (const res of responses.filter((r) => r.statusCode === 409)) expect(res.json()).toEqual(CONFLICT);
    expect(
      await t.countRows('followers', (q) =>
        q.where('follower_id', '=', fan.id).where('followed_id', '=', star.id),
      ),
    ).toBe(1);
  });
});
