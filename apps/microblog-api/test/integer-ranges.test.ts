import type { LightMyRequestResponse } from 'fastify';
import { inUrl, OUT_OF_RANGE_INTEGERS } from '@platform/testing';
import { buildTestApp, storedTotals, type TestApp } from './support/app';

/**
 * Issue #21: every integer a client sends is checked against the PostgreSQL integer (int4) it ends up
 * in before it reaches SQL; the answer is problem details, never a 500. Query `limit`/`before` and a
 * numeric `post_id` outside their declared range are validation errors naming the field; a post id
 * written as digits that no int4 holds names no post (404), as any unknown id.
 */

/** Integers no int4 holds, as the hostile generator sends them. */
const BEYOND_INT4 = OUT_OF_RANGE_INTEGERS;
const IN_URL = [...BEYOND_INT4.map(inUrl), 'Infinity', '-Infinity', '1e309', '2147483647.5'];
const IN_JSON = [...BEYOND_INT4, '1e309', '-1e309', '2147483647.5', '1.5'];

function expectProblem(res: LightMyRequestResponse, status: number, context: string) {
  expect({ context, status: res.statusCode }).toEqual({ context, status });
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json\b/);
  expect(res.json()).toMatchObject({ type: 'about:blank', status });
}
function expectInvalid(res: LightMyRequestResponse, field: string, context: string) {
  expectProblem(res, 400, context);
  expect(res.json().errors.map((e: { field: string }) => e.field)).toContain(field);
}

describe('integers out of range are a 400 problem (or a 404 for an id that names nothing), never a 500', () => {
  let t: TestApp;
  let postId: number;

  beforeAll(async () => {
    t = await buildTestApp();
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/microblog',
      payload: { content: 'the target', quest_topic: 'online_safety', student_name: 'Ada' },
    });
    expect(res.statusCode).toBe(201);
    postId = res.json().id;
  });

  afterAll(async () => {
    await t?.close();
  });

  const list = (query: string) => t.app.inject({ method: 'GET', url: `/api/microblog?${query}` });

  test('limit and before beyond their ranges: a validation error naming the field', async () => {
    for (const field of ['limit', 'before'])
      for (const value of IN_URL) expectInvalid(await list(`${field}=${value}`), field, `${field}=${value}`);
  });

  test('before=2^31-1 is in range: the newest posts', async () => {
    const res = await list('before=2147483647');
    expect(res.statusCode).toBe(200);
    expect(res.json().map((p: { id: number }) => p.id)).toContain(postId);
  });

  test('a numeric post_id (and its aliases) beyond int4: a validation error; nothing stored', async () => {
    const before = await storedTotals(t.database);
    for (const path of ['/api/microblog/reply', '/api/microblog/reaction'])
      for (const field of ['post_id', 'postId', 'microblogId'])
        for (const value of IN_JSON) {
          const extra = path.endsWith('reply') ? ',"content":"a reply"' : '';
          const res = await t.app.inject({
            method: 'POST',
            url: path,
            headers: { 'content-type': 'application/json' },
            payload: `{"${field}":${value}${extra}}`,
          });
          expectInvalid(res, field, `${path} ${field}=${value}`);
        }
    expect(await storedTotals(t.database)).toEqual(before);
  });

  test('a post id written as digits no int4 holds names no post: 404; 2^31-1 as well', async () => {
    const before = await storedTotals(t.database);
    for (const path of ['/api/microblog/reply', '/api/microblog/reaction'])
      for (const value of ['2147483647', '2147483648', '4294967295', '9999999999']) {
        const res = await t.app.inject({
          method: 'POST',
          url: path,
          payload: { post_id: value, content: 'a reply' },
        });
        expectProblem(res, 404, `${path} "${value}"`);
      }
    // More digits than any int4 has: the schema's pattern refuses them.
    for (const value of ['99999999999999999999999', '9223372036854775808']) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/microblog/reaction',
        payload: { post_id: value },
      });
      expectInvalid(res, 'post_id', `"${value}"`);
    }
    expect(await storedTotals(t.database)).toEqual(before);
  });

  test('the OpenAPI document states the ranges', async () => {
    const doc = t.app.swagger() as {
      paths: Record<string, Record<string, { parameters?: { name: string; schema: object }[] }>>;
    };
    const parameters = doc.paths['/api/microblog'].get.parameters ?? [];
    expect(parameters.find((p) => p.name === 'limit')?.schema).toMatchObject({ minimum: 1, maximum: 500 });
    expect(parameters.find((p) => p.name === 'before')?.schema).toMatchObject({
      minimum: 1,
      maximum: 2147483647,
    });
  });
});
