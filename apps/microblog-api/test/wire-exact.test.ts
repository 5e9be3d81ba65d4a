import { Type } from '@sinclair/typebox';
import { wireMismatches } from '@platform/db/testing';
import { openForTheseTests } from '@platform/testing';
import { Post } from '../src/posts/schemas';
import { buildTestApp } from './support/app';

/**
 * The page of posts is answered by the native JSON serialiser (`nativeJson`): it sends exactly what
 * its response schema names, in the schema's order, nothing more, and JSON.stringify's escaping.
 * Each body is walked against its schema.
 */

const testApp = openForTheseTests(() => buildTestApp(), 60_000);

test('every page of posts sends exactly its schema: properties, order, escaping', async () => {
  const t = testApp();
  const text = 'quotes " and \\ , controls \u0001\t\n, \u2028, é, 😀, </script>';
  const ids: number[] = [];
  for (const [content, topic] of [
    [text, 'online_safety'],
    ['plain', 'privacy_security'],
  ] as const) {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/microblog',
      payload: { content, quest_topic: topic, student_name: 'Zoë "Z"' },
    });
    expect(res.statusCode).toBe(201);
    ids.push(res.json().id);
  }
  const reply = await t.app.inject({
    method: 'POST',
    url: '/api/microblog/reply',
    payload: { post_id: ids[0], content: text, student_name: 'Bob' },
  });
  expect(reply.statusCode).toBe(201);

  const Page = Type.Array(Post);
  for (const url of [
    '/api/microblog',
    '/api/microblog?limit=1',
    `/api/microblog?before=${ids[1]}`,
    '/api/microblog?topic=online_safety',
  ]) {
    const res = await t.app.inject(url);
    expect([url, res.statusCode, res.headers['content-type']]).toEqual([
      url,
      200,
      'application/json; charset=utf-8',
    ]);
    expect([url, wireMismatches(res.json(), Page, res.body)]).toEqual([url, []]);
    expect(res.json().length).toBeGreaterThan(0);
  }
  const [first] = (await t.app.inject(`/api/microblog?before=${ids[1]}`)).json();
  expect(first.content).toBe(text);
  expect(first.replies.map((r: { content: string }) => r.content)).toEqual([text]);
});
