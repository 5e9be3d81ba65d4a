import type { LightMyRequestResponse } from 'fastify';
import { OUT_OF_RANGE_INTEGERS, openForTheseTests } from '@platform/testing';
import { buildTestApp } from './support/app';
import { workspaceEntry } from './support/registry';

/**
 * Issue #21: every integer of every operation is checked against where it ends up before it reaches
 * SQL, and answered in Kasm's `{"error_message"}` with a 400, never a 500. `page`/`page_size` never
 * reach SQL beyond a list's end; they go through JavaScript numbers, so beyond ±(2^53 - 1) they are a
 * type error, and within it Kasm's own paging rules answer. `priority` and the registry entry's counts
 * are `integer` (int4) columns, refused with Kasm's messages before any statement.
 */

const BAD_PAGING = 'Invalid Request: page and page_size must be positive';

/** JSON numbers as written on the wire (the body's own text: 2^63 is not rounded by a serialiser here). */
const BEYOND_SAFE = OUT_OF_RANGE_INTEGERS.filter((v) => Math.abs(Number(v)) > Number.MAX_SAFE_INTEGER);
/** Beyond int4 but exact in JavaScript. */
const BEYOND_INT4 = ['2147483648', '-2147483649', '4294967296', '2.147483648e9'];
/** Not integers at all: a fraction, and a number JSON.parse makes Infinity. */
const NOT_INTEGERS = ['2147483647.5', '1.5', '1e309', '-1e309'];

describe('integers out of range are a 400 in Kasm’s error shape, never a 500', () => {
  const t = openForTheseTests(() => buildTestApp(), 60_000);

  /** `operation` with the admin key and `fields` spliced in as raw JSON text. */
  const raw = (operation: string, fields: string) => {
    const { api_key, api_key_secret } = t().admin;
    const key = JSON.stringify({ api_key, api_key_secret }).slice(0, -1);
    return t().app.inject({
      method: 'POST',
      url: `/api/public/${operation}`,
      headers: { 'content-type': 'application/json' },
      payload: `${key},${fields}}`,
    });
  };
  const expectKasm400 = (r: LightMyRequestResponse, context: string, message?: string | RegExp) => {
    expect({ context, status: r.statusCode }).toEqual({ context, status: 400 });
    expect(Object.keys(r.json())).toEqual(['error_message']);
    if (typeof message === 'string') expect(r.json().error_message).toBe(message);
    else if (message) expect(r.json().error_message).toMatch(message);
  };
  const ok = (r: LightMyRequestResponse) => {
    expect({ status: r.statusCode, body: r.statusCode === 200 ? 'ok' : r.json() }).toEqual({
      status: 200,
      body: 'ok',
    });
    return r.json();
  };

  let groupId: string;
  beforeAll(async () => {
    groupId = ok(await t().call('create_group', { target_group: { name: 'ranges', priority: 50 } })).group
      .group_id;
  });

  const pagedOperations = () => [
    { operation: 'get_users', target: '' },
    { operation: 'get_users_group', target: `"target_group":{"group_id":"${groupId}"},` },
  ];

  test('page and page_size beyond JavaScript’s exact integers: a type error naming the field', async () => {
    for (const { operation, target } of pagedOperations())
      for (const value of [...BEYOND_SAFE, ...NOT_INTEGERS]) {
        expectKasm400(await raw(operation, `${target}"page":${value}`), `${operation} page=${value}`, /page/);
        expectKasm400(
          await raw(operation, `${target}"page":1,"page_size":${value}`),
          `${operation} page_size=${value}`,
          /page_size/,
        );
      }
  });

  test('within them, Kasm’s paging rules: a huge page is past the end, a huge page_size is BadPaging', async () => {
    for (const { operation, target } of pagedOperations()) {
      for (const value of [...BEYOND_INT4.filter((v) => !v.startsWith('-')), '9007199254740991']) {
        const r = await raw(operation, `${target}"page":${value},"page_size":1000`);
        expect(ok(r)).toMatchObject({ users: [] });
        expectKasm400(
          await raw(operation, `${target}"page":1,"page_size":${value}`),
          `${operation} page_size=${value}`,
          BAD_PAGING,
        );
      }
      for (const value of ['-2147483649', '-9007199254740991'])
        expectKasm400(
          await raw(operation, `${target}"page":${value}`),
          `${operation} page=${value}`,
          BAD_PAGING,
        );
    }
  });

  test('the OpenAPI document states the range of page and page_size', async () => {
    const doc = t().app.swagger() as {
      paths: Record<string, { post: { requestBody: { content: Record<string, { schema: unknown }> } } }>;
    };
    const body = JSON.stringify(doc.paths['/api/public/get_users'].post.requestBody.content);
    expect(body).toContain('"maximum":9007199254740991');
    expect(body).toContain('"minimum":-9007199254740991');
  });

  test('priority beyond its range (and beyond int4, 2^53, 2^63): Kasm’s priority error or a type error', async () => {
    for (const value of [...BEYOND_INT4, ...BEYOND_SAFE, ...NOT_INTEGERS, '4096', '0']) {
      const create = await raw('create_group', `"target_group":{"name":"p ${value}","priority":${value}}`);
      expectKasm400(create, `create_group priority=${value}`, /priority|Invalid/);
      const update = await raw(
        'update_group',
        `"target_group":{"group_id":"${groupId}","priority":${value}}`,
      );
      expectKasm400(update, `update_group priority=${value}`, /priority|Invalid/);
    }
    const groups = ok(await t().call('get_groups', {})).groups as { name: string; priority: number }[];
    expect(groups.find((g) => g.name === 'ranges')?.priority).toBe(50);
    expect(groups.filter((g) => g.name.startsWith('p '))).toEqual([]);
  });

  test('the registry entry’s integer counts beyond int4: a 400 naming the field, nothing installed', async () => {
    for (const field of ['uncompressed_size_mb', 'memory', 'gpu_count'])
      for (const value of [...BEYOND_INT4, ...BEYOND_SAFE, ...NOT_INTEGERS, '-1']) {
        const entry = JSON.stringify(workspaceEntry()).slice(0, -1);
        const r = await raw('install_workspace', `"workspace":${entry},"${field}":${value}}`);
        expectKasm400(r, `${field}=${value}`, new RegExp(field));
      }
    // 2^31 - 1 itself fits the column.
    const r = await raw(
      'install_workspace',
      `"workspace":${JSON.stringify(workspaceEntry({ memory: 2147483647 }))}`,
    );
    expect(ok(r).image.memory).toBe(2147483647);
    const images = ok(await t().call('get_images', {})).images as unknown[];
    expect(images).toHaveLength(1);
  });
});
