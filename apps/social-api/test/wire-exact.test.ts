import type { TSchema } from '@sinclair/typebox';
import { wireMismatches as mismatches } from '@platform/db/testing';
import { openForTheseTests } from '@platform/testing';
import { PostPage } from '../src/posts/routes';
import { User } from '../src/users/schemas';
import { UserPage } from '../src/users/routes';
import { buildTestApp } from './support/app';

/**
 * The reads answered by the native JSON serialiser (`nativeJson`: every collection, `/me`, a user)
 * send exactly what their response schemas name, in the schemas' order, nothing more: the
 * schema's serialiser is not there any more to drop a property a mapping lets through (a password
 * hash, an internal counter) or to reorder one. Each body is walked against its schema.
 */

const testApp = openForTheseTests(() => buildTestApp(), 60_000);

test('every natively serialised read sends exactly its schema: properties, order, escaping', async () => {
  const t = testApp();
  const alice = await t.register({ about_me: 'quotes " \\ and a line\nbreak, \u2028, emoji 🦊' });
  const bob = await t.register({ about_me: null });
  expect((await t.as(alice.token, { method: 'POST', url: `/api/me/following/${bob.id}` })).statusCode).toBe(
    204,
  );
  for (const [user, text] of [
    [alice, 'control \u0001 and "quoted" \\ text'],
    [bob, 'plain'],
  ] as const) {
    const res = await t.as(user.token, { method: 'POST', url: '/api/posts', payload: { text } });
    expect(res.statusCode).toBe(201);
  }

  const reads: [string, TSchema, number][] = [
    ['/api/posts', PostPage, 2],
    ['/api/feed', PostPage, 2],
    [`/api/users/${bob.id}/posts`, PostPage, 1],
    ['/api/users', UserPage, 2],
    ['/api/me/following', UserPage, 1],
    [`/api/users/${bob.id}/followers`, UserPage, 1],
  ];
  for (const [url, schema, count] of reads) {
    const res = await t.as(alice.token, { method: 'GET', url });
    expect([url, res.statusCode, res.headers['content-type']]).toEqual([
      url,
      200,
      'application/json; charset=utf-8',
    ]);
    const body = res.json();
    expect([url, mismatches(body, schema)]).toEqual([url, []]);
    expect([url, body.data.length, body.pagination.count]).toEqual([url, count, count]);
  }
  for (const url of ['/api/me', `/api/users/${bob.id}`, `/api/users/${alice.username}`]) {
    const res = await t.as(alice.token, { method: 'GET', url });
    expect([url, res.statusCode]).toEqual([url, 200]);
    expect([url, mismatches(res.json(), User)]).toEqual([url, []]);
  }

  // The text the API stored comes back byte for byte, through JSON's escaping.
  const own = (await t.as(alice.token, { method: 'GET', url: '/api/me' })).json();
  expect(own.about_me).toBe('quotes " \\ and a line\nbreak, \u2028, emoji 🦊');
  const posts = (await t.as(bob.token, { method: 'GET', url: '/api/posts' })).json();
  expect(posts.data.map((p: { text: string }) => p.text)).toEqual([
    'plain',
    'control \u0001 and "quoted" \\ text',
  ]);
});

test('the walk catches a property the schema does not name, a missing one and another order', () => {
  const user = { id: 1, url: '/api/users/1', username: 'a', email: 'a@example.com', has_password: true };
  const rest = { avatar_url: 'x', about_me: null, first_seen: 'x', last_seen: 'x', posts_url: 'x' };
  expect(mismatches({ ...user, ...rest }, User)).toEqual([]);
  expect(mismatches({ ...user, ...rest, password_hash: 'h' }, User)).toHaveLength(1);
  expect(mismatches({ ...rest, ...user }, User)).toHaveLength(1);
  const page = {
    pagination: { limit: 25, offset: 0, count: 1, total: 1 },
    data: [{ ...user, ...rest, extra: 1 }],
  };
  expect(mismatches(page, UserPage)).toEqual([
    '$.data[0]: properties ' +
      Object.keys(page.data[0]).join() +
      ' (schema: ' +
      Object.keys(User.properties).join() +
      ')',
  ]);
});
