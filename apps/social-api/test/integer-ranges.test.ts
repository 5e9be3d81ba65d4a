import { inUrl, OUT_OF_RANGE_INTEGERS } from '@platform/testing';
import { buildTestApp, type TestApp, type TestUser } from './support/app';
import { BAD_REQUEST, expectQueryErrors, NOT_FOUND } from './support/wire';

/**
 * Issue #21: every integer a client sends is checked against the PostgreSQL integer (int4) it ends up
 * in before it reaches SQL. `limit` and `offset` beyond int4 are validation errors in the Flask
 * envelope (before, `offset=2147483648` on a follower list and `offset=9223372036854775808` on
 * `/api/posts` were 500s: PostgreSQL refused the value); path ids beyond it name nothing (404, as
 * Flask's `<int:id>`). Never a 500.
 */

/** Integers no int4 holds, as the hostile generator sends them in a URL. */
const BEYOND_INT4 = OUT_OF_RANGE_INTEGERS.map(inUrl);
const RANGE_MESSAGE = 'Must be greater than or equal to -2147483648 and less than or equal to 2147483647.';

describe('integers out of range are a 400 (or a 404 for a path id), never a 500', () => {
  let t: TestApp;
  let alice: TestUser;
  let loner: TestUser;
  let postId: number;

  beforeAll(async () => {
    t = await buildTestApp();
    alice = await t.register({ username: 'alice' });
    const bob = await t.register({ username: 'bob' });
    loner = await t.register({ username: 'loner' });
    expect((await t.as(alice.token, { method: 'POST', url: `/api/me/following/${bob.id}` })).statusCode).toBe(
      204,
    );
    expect((await t.as(bob.token, { method: 'POST', url: `/api/me/following/${alice.id}` })).statusCode).toBe(
      204,
    );
    const post = await t.as(alice.token, { method: 'POST', url: '/api/posts', payload: { text: 'hi' } });
    expect(post.statusCode).toBe(201);
    postId = post.json().id;
  });

  afterAll(async () => {
    await t?.close();
  });

  /** Every collection, with one that has items (as alice) and one that is empty (as loner). */
  const collections = () => [
    { url: '/api/users', full: alice, empty: undefined },
    { url: '/api/posts', full: alice, empty: undefined },
    { url: '/api/feed', full: alice, empty: loner },
    { url: '/api/me/following', full: alice, empty: loner },
    { url: '/api/me/followers', full: alice, empty: loner },
    { url: `/api/users/${alice.id}/posts`, full: alice, empty: undefined },
    { url: `/api/users/${alice.id}/following`, full: alice, empty: undefined },
    { url: `/api/users/${alice.id}/followers`, full: alice, empty: undefined },
    { url: `/api/users/${loner.id}/posts`, full: undefined, empty: loner },
    { url: `/api/users/${loner.id}/following`, full: undefined, empty: loner },
    { url: `/api/users/${loner.id}/followers`, full: undefined, empty: loner },
  ];
  const get = (user: TestUser, url: string) => t.as(user.token, { method: 'GET', url });

  test('limit and offset beyond int4: a validation error on the field, on every collection', async () => {
    for (const { url, full, empty } of collections())
      for (const user of [full, empty].filter((u): u is TestUser => u !== undefined))
        for (const field of ['offset', 'limit'])
          for (const value of BEYOND_INT4) {
            const res = await get(user, `${url}?${field}=${value}`);
            expectQueryErrors(res, { [field]: [RANGE_MESSAGE] });
          }
  });

  test('non-integers stay "Not a valid integer." (floats, non-finite numbers)', async () => {
    for (const { url } of collections())
      for (const field of ['offset', 'limit'])
        for (const value of ['1.5', '2147483647.5', 'Infinity', '-1e309', '1e400'])
          expectQueryErrors(await get(alice, `${url}?${field}=${value}`), {
            [field]: ['Not a valid integer.'],
          });
  });

  test('2^31 - 1 itself is in range: past the end of a collection (400), an empty page of an empty one', async () => {
    for (const { url, full, empty } of collections()) {
      if (full) {
        const res = await get(full, `${url}?offset=2147483647`);
        expect(res.statusCode).toBe(400);
        expect(res.json()).toEqual(BAD_REQUEST);
        // A huge limit is clamped, as the Flask backend does.
        const clamped = await get(full, `${url}?limit=2147483647`);
        expect(clamped.statusCode).toBe(200);
        expect(clamped.json().pagination).toMatchObject({ limit: 25, offset: 0 });
      }
      if (empty) {
        const res = await get(empty, `${url}?offset=2147483647`);
        expect(res.statusCode).toBe(200);
        expect(res.json()).toEqual({
          pagination: { limit: 25, offset: 2147483647, count: 0, total: 0 },
          data: [],
        });
      }
    }
  });

  test('the smallest int4 is a plain 400 (a negative offset or limit, as the Flask backend answers)', async () => {
    for (const { url } of collections())
      for (const field of ['offset', 'limit']) {
        const res = await get(alice, `${url}?${field}=-2147483648`);
        expect(res.statusCode).toBe(400);
        expect(res.json()).toEqual(BAD_REQUEST);
      }
  });

  test('path ids beyond int4 name nothing: 404 on every route that takes one', async () => {
    const routes: [string, string][] = [
      ['GET', '/api/users/<id>'],
      ['GET', '/api/users/<id>/posts'],
      ['GET', '/api/users/<id>/following'],
      ['GET', '/api/users/<id>/followers'],
      ['GET', '/api/me/following/<id>'],
      ['POST', '/api/me/following/<id>'],
      ['DELETE', '/api/me/following/<id>'],
      ['GET', '/api/posts/<id>'],
      ['PUT', '/api/posts/<id>'],
      ['DELETE', '/api/posts/<id>'],
    ];
    for (const [method, route] of routes)
      for (const id of ['2147483647', ...BEYOND_INT4, '-1', '0']) {
        const res = await t.as(alice.token, {
          method: method as 'GET',
          url: route.replace('<id>', id),
          ...(method === 'PUT' ? { payload: { text: 'edited' } } : {}),
        });
        expect({ method, route, id, status: res.statusCode }).toEqual({ method, route, id, status: 404 });
        expect(res.json()).toEqual(NOT_FOUND);
      }
    // Nothing changed on the way.
    const post = await t.as(alice.token, { method: 'GET', url: `/api/posts/${postId}` });
    expect(post.json().text).toBe('hi');
  });

  test('the OpenAPI document states the range of limit and offset', async () => {
    const doc = t.app.swagger() as {
      paths: Record<string, Record<string, { parameters?: { name: string; schema: object }[] }>>;
    };
    for (const path of ['/api/users', '/api/posts', '/api/feed', '/api/users/{id}/followers']) {
      const parameters = doc.paths[path].get.parameters ?? [];
      for (const name of ['limit', 'offset'])
        expect(parameters.find((p) => p.name === name)?.schema).toMatchObject({
          type: 'integer',
          minimum: -2147483648,
          maximum: 2147483647,
        });
    }
  });
});
