import type { LightMyRequestResponse } from 'fastify';
import { ALL_USERS_GROUP_ID, toKasmId } from '../src/wire/kasm';
import { openForTheseTests } from '@platform/testing';
import { buildTestApp } from './support/app';
import { dashed, UNKNOWN, USER_KEYS } from './support/kasm';

const ALL_USERS = '68d557ac4cac42cca9f31c7c853de0f3';
const MISSING = 'Invalid Request: Missing required parameters';
const BAD_PAGING = 'Invalid Request: page and page_size must be positive';
const GROUP_KEYS = ['description', 'group_id', 'is_system', 'name', 'priority'];
/** Bodies that name no group: each is `Invalid Request: Missing required parameters`. */
const NO_GROUP_ID = [{}, { target_group: null }, { target_group: {} }, { target_group: { group_id: null } }];

const upperDashed = (hex: string) => dashed(hex).toUpperCase();

interface GroupJson {
  group_id: string;
  name: string;
  description: string | null;
  priority: number;
  is_system: boolean;
}

describe('groups and memberships', () => {
  const t = openForTheseTests(() => buildTestApp(), 60_000);

  const expectError = (r: LightMyRequestResponse, message: string, status = 400) =>
    expect({ status: r.statusCode, body: r.json() }).toEqual({ status, body: { error_message: message } });
  /** Each body answered by `op` with a 400 and its message, one after the other. */
  const expectErrors = async (op: string, cases: [Record<string, unknown>, string][]) => {
    for (const [body, message] of cases) expectError(await t().call(op, body), message);
  };
  /** A schema (type) failure: a 400 in Kasm's error shape naming the field. */
  const expectTypeError = (r: LightMyRequestResponse, field: string) => {
    expect(r.statusCode).toBe(400);
    expect(Object.keys(r.json())).toEqual(['error_message']);
    expect(r.json().error_message).toContain(field);
  };
  const ok = (r: LightMyRequestResponse) => {
    expect({ status: r.statusCode, body: r.statusCode === 200 ? 'ok' : r.json() }).toEqual({
      status: 200,
      body: 'ok',
    });
    return r.json();
  };

  let seq = 0;
  /** Users do not come from the API here: inserted like create_user would (and into All Users). */
  async function createUser(options: { username?: string; created?: Date } = {}): Promise<string> {
    const db = t().database.db;
    const row = await db
      .insertInto('users')
      .values({
        username: options.username ?? `member${++seq}`,
        first_name: 'Test',
        last_name: `User ${seq}`,
        ...(options.created ? { created: options.created } : {}),
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    await db.insertInto('user_groups').values({ user_id: row.id, group_id: ALL_USERS_GROUP_ID }).execute();
    return toKasmId(row.id);
  }

  async function createGroup(name: string, priority = 100, description?: string): Promise<GroupJson> {
    return ok(await t().call('create_group', { target_group: { name, priority, description } })).group;
  }

  /** The user's membership rows, as 32-hex group ids, sorted. */
  async function groupsOf(userId: string): Promise<string[]> {
    const rows = await t()
      .database.db.selectFrom('user_groups')
      .select('group_id')
      .where('user_id', '=', dashed(userId))
      .execute();
    return rows.map((r) => toKasmId(r.group_id)).sort();
  }

  async function listGroups(): Promise<GroupJson[]> {
    const body = ok(await t().call('get_groups'));
    expect(Object.keys(body)).toEqual(['groups']);
    return body.groups;
  }

  const add = (user_id: unknown, group_id: unknown) =>
    t().call('add_user_group', { target_user: { user_id }, target_group: { group_id } });
  const remove = (user_id: unknown, group_id: unknown) =>
    t().call('remove_user_group', { target_user: { user_id }, target_group: { group_id } });
  const move = (user_id: unknown, old_group: Record<string, unknown>, new_group: Record<string, unknown>) =>
    t().call('change_user_group', { target_user: { user_id }, old_group, new_group });
  /** A new user who is a member of `groups` too (besides All Users). */
  const memberOf = async (...groups: GroupJson[]) => {
    const u = await createUser();
    for (const g of groups) ok(await add(u, g.group_id));
    return u;
  };

  describe('get_groups', () => {
    test('All Users is there with its fixed id, is_system true, exactly the Kasm group keys', async () => {
      const groups = await listGroups();
      const all = groups.find((g) => g.group_id === ALL_USERS);
      expect(all).toEqual({
        group_id: ALL_USERS,
        name: 'All Users',
        description: 'Default group for all users',
        priority: 4095,
        is_system: true,
      });
      for (const g of groups) expect(Object.keys(g).sort()).toEqual(GROUP_KEYS);
    });

    test('ordered by priority, then name', async () => {
      await createGroup('order-b', 20);
      await createGroup('order-z', 10);
      await createGroup('order-a', 20);
      const groups = await listGroups();
      expect(groups.map((g) => g.name).filter((n) => n.startsWith('order-'))).toEqual([
        'order-z',
        'order-a',
        'order-b',
      ]);
      const priorities = groups.map((g) => g.priority);
      expect(priorities).toEqual([...priorities].sort((a, b) => a - b));
    });

    test('works with a read-only Groups View key, also with the credentials in the headers', async () => {
      const key = await t().createKey(['Groups View'], { readOnly: true });
      expect((await t().call('get_groups', {}, key)).statusCode).toBe(200);
      const headers = { 'api-key': key.api_key, 'api-key-secret': key.api_key_secret };
      const r = await t().app.inject({ method: 'POST', url: '/api/public/get_groups', headers, payload: {} });
      expect(r.statusCode).toBe(200);
      expect(r.json().groups.some((g: GroupJson) => g.group_id === ALL_USERS)).toBe(true);
    });
  });

  describe('create_group', () => {
    test('answers {group} with a new 32-hex id; the name is trimmed, the description optional', async () => {
      const body = ok(
        await t().call('create_group', {
          target_group: { name: '  Students  ', priority: 50, description: 'CSP period 3' },
        }),
      );
      expect(Object.keys(body)).toEqual(['group']);
      expect(Object.keys(body.group).sort()).toEqual(GROUP_KEYS);
      expect(body.group).toEqual({
        group_id: expect.stringMatching(/^[0-9a-f]{32}$/),
        name: 'Students',
        description: 'CSP period 3',
        priority: 50,
        is_system: false,
      });
      expect((await listGroups()).find((g) => g.group_id === body.group.group_id)).toEqual(body.group);

      const plain = await createGroup('No description', 7);
      expect(plain.description).toBeNull();
      const nulled = ok(
        await t().call('create_group', {
          target_group: { name: 'Null description', priority: 7, description: null },
        }),
      );
      expect(nulled.group.description).toBeNull();
    });

    test('priority bounds 1 and 4095 are accepted', async () => {
      expect((await createGroup('lowest-number', 1)).priority).toBe(1);
      expect((await createGroup('highest-number', 4095)).priority).toBe(4095);
    });

    test('a missing, null or blank name or a missing or null priority: missing parameters', async () => {
      for (const body of [
        {},
        { target_group: null },
        { target_group: {} },
        { target_group: { priority: 10 } },
        { target_group: { name: 'no priority' } },
        { target_group: { name: null, priority: 10 } },
        { target_group: { name: 'null priority', priority: null } },
        { target_group: { name: '   ', priority: 10 } },
        { target_group: { name: '', priority: 10 } },
      ]) {
        expectError(await t().call('create_group', body), MISSING);
      }
      // missing fields are reported before an invalid priority
      expectError(await t().call('create_group', { target_group: { priority: 0 } }), MISSING);
    });

    test('priority outside 1..4095, or not an integer: Invalid priority value (<p>)', async () => {
      for (const [p, shown] of [
        [0, '0'],
        [4096, '4096'],
        [-5, '-5'],
        [1.5, '1.5'],
        [100000, '100000'],
      ] as const) {
        expectError(
          await t().call('create_group', { target_group: { name: `bad priority ${p}`, priority: p } }),
          `Invalid priority value (${shown})`,
        );
      }
      // an invalid priority is reported before a taken name
      expectError(
        await t().call('create_group', { target_group: { name: 'All Users', priority: 0 } }),
        'Invalid priority value (0)',
      );
      expect((await listGroups()).some((g) => g.name.startsWith('bad priority'))).toBe(false);
    });

    test('types are strict: a string priority, a numeric name, a string target are 400s', async () => {
      expectTypeError(
        await t().call('create_group', { target_group: { name: 'typed', priority: '10' } }),
        'target_group.priority',
      );
      expectTypeError(
        await t().call('create_group', { target_group: { name: 12, priority: 10 } }),
        'target_group.name',
      );
      expectTypeError(
        await t().call('create_group', { target_group: { name: 'typed', priority: 10, description: 5 } }),
        'target_group.description',
      );
      expectTypeError(await t().call('create_group', { target_group: 'typed' }), 'target_group');
      expect((await listGroups()).some((g) => g.name === 'typed')).toBe(false);
    });

    test('names are unique as written (trimmed, case-sensitive): Group (<name>) already exists', async () => {
      await createGroup('Teachers', 30);
      expectError(
        await t().call('create_group', { target_group: { name: 'Teachers', priority: 40 } }),
        'Group (Teachers) already exists',
      );
      expectError(
        await t().call('create_group', { target_group: { name: '  Teachers ', priority: 40 } }),
        'Group (Teachers) already exists',
      );
      expectError(
        await t().call('create_group', { target_group: { name: 'All Users', priority: 40 } }),
        'Group (All Users) already exists',
      );
      expect((await createGroup('teachers', 30)).name).toBe('teachers');
      expect((await listGroups()).filter((g) => g.name === 'Teachers')).toHaveLength(1);
    });

    test('unknown fields are ignored', async () => {
      const body = ok(
        await t().call('create_group', {
          target_group: { name: 'extra fields', priority: 5, group_metadata: { x: 1 }, is_system: true },
          other: 1,
        }),
      );
      expect(body.group.is_system).toBe(false);
    });
  });

  describe('update_group', () => {
    test('changes name, priority and description; absent and null fields stay unchanged', async () => {
      const g = await createGroup('to-update', 300, 'before');
      const renamed = ok(
        await t().call('update_group', {
          target_group: { group_id: g.group_id, name: '  updated  ', priority: 301 },
        }),
      );
      expect(Object.keys(renamed)).toEqual(['group']);
      expect(renamed.group).toEqual({ ...g, name: 'updated', priority: 301, description: 'before' });

      const nulls = ok(
        await t().call('update_group', {
          target_group: { group_id: g.group_id, name: null, priority: null, description: null },
        }),
      );
      expect(nulls.group).toEqual(renamed.group);
      const nothing = ok(await t().call('update_group', { target_group: { group_id: g.group_id } }));
      expect(nothing.group).toEqual(renamed.group);

      const described = ok(
        await t().call('update_group', {
          target_group: { group_id: dashed(g.group_id), description: 'after' },
        }),
      );
      expect(described.group).toEqual({ ...renamed.group, description: 'after' });
      expect((await listGroups()).find((x) => x.group_id === g.group_id)).toEqual(described.group);

      // its own name is not a conflict
      expect(
        ok(await t().call('update_group', { target_group: { group_id: g.group_id, name: 'updated' } })).group
          .name,
      ).toBe('updated');
    });

    test('missing group_id; malformed or unknown id: Invalid Group ID (<as given>)', async () => {
      for (const body of [
        {},
        { target_group: null },
        { target_group: {} },
        { target_group: { group_id: null, name: 'x' } },
      ]) {
        expectError(await t().call('update_group', body), MISSING);
      }
      expectError(
        await t().call('update_group', { target_group: { group_id: 'not-an-id', name: 'x' } }),
        'Invalid Group ID (not-an-id)',
      );
      expectError(
        await t().call('update_group', { target_group: { group_id: '', name: 'x' } }),
        'Invalid Group ID ()',
      );
      expectError(
        await t().call('update_group', { target_group: { group_id: UNKNOWN, name: 'x' } }),
        `Invalid Group ID (${UNKNOWN})`,
      );
      expectError(
        await t().call('update_group', { target_group: { group_id: upperDashed(UNKNOWN) } }),
        `Invalid Group ID (${upperDashed(UNKNOWN)})`,
      );
      // the id is checked first
      expectError(
        await t().call('update_group', { target_group: { group_id: UNKNOWN, priority: 0 } }),
        `Invalid Group ID (${UNKNOWN})`,
      );
      expectTypeError(
        await t().call('update_group', { target_group: { group_id: 42 } }),
        'target_group.group_id',
      );
    });

    test('invalid priority, blank name, taken name', async () => {
      const g = await createGroup('update-errors', 200);
      await createGroup('update-taken', 200);
      expectError(
        await t().call('update_group', { target_group: { group_id: g.group_id, priority: 4096 } }),
        'Invalid priority value (4096)',
      );
      expectError(
        await t().call('update_group', { target_group: { group_id: g.group_id, priority: 2.25 } }),
        'Invalid priority value (2.25)',
      );
      expectTypeError(
        await t().call('update_group', { target_group: { group_id: g.group_id, priority: '5' } }),
        'target_group.priority',
      );
      expectError(
        await t().call('update_group', { target_group: { group_id: g.group_id, name: '  ' } }),
        MISSING,
      );
      expectError(
        await t().call('update_group', { target_group: { group_id: g.group_id, name: ' update-taken ' } }),
        'Group (update-taken) already exists',
      );
      expectError(
        await t().call('update_group', { target_group: { group_id: g.group_id, name: 'All Users' } }),
        'Group (All Users) already exists',
      );
      // nothing changed
      expect((await listGroups()).find((x) => x.group_id === g.group_id)).toEqual(g);
    });

    test('the system group keeps its id and is_system when its description changes', async () => {
      const before = (await listGroups()).find((g) => g.group_id === ALL_USERS)!;
      const changed = ok(
        await t().call('update_group', { target_group: { group_id: ALL_USERS, description: 'Everyone' } }),
      );
      expect(changed.group).toEqual({ ...before, description: 'Everyone' });
      ok(
        await t().call('update_group', {
          target_group: { group_id: ALL_USERS, description: before.description },
        }),
      );
    });
  });

  describe('delete_group', () => {
    test('answers {} and removes the group, its memberships and its allowed images', async () => {
      const g = await createGroup('to-delete', 500);
      const u = await createUser();
      ok(await add(u, g.group_id));
      const image = await t()
        .database.db.insertInto('images')
        .values({
          name: 'kasmweb/test:1.0',
          friendly_name: 'Test',
          description: 'test image',
          image_src: 'test.png',
          architecture: ['amd64'],
          compatibility: ['1.13.x'],
          uncompressed_size_mb: 1,
          categories: [],
          run_config: null,
          exec_config: null,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      await t()
        .database.db.insertInto('group_images')
        .values({ group_id: dashed(g.group_id), image_id: image.id })
        .execute();

      const r = await t().call('delete_group', { target_group: { group_id: g.group_id } });
      expect({ status: r.statusCode, body: r.json() }).toEqual({ status: 200, body: {} });
      expect((await listGroups()).some((x) => x.group_id === g.group_id)).toBe(false);
      expect(await groupsOf(u)).toEqual([ALL_USERS]);
      expect(
        await t()
          .database.db.selectFrom('group_images')
          .select('image_id')
          .where('group_id', '=', dashed(g.group_id))
          .execute(),
      ).toEqual([]);
      // the image and the user themselves stay
      expect(
        await t().database.db.selectFrom('images').select('id').where('id', '=', image.id).execute(),
      ).toHaveLength(1);
      expect(
        await t().database.db.selectFrom('users').select('id').where('id', '=', dashed(u)).execute(),
      ).toHaveLength(1);

      expectError(
        await t().call('delete_group', { target_group: { group_id: g.group_id } }),
        `Invalid Group ID (${g.group_id})`,
      );
    });

    test('accepts a dashed id', async () => {
      const g = await createGroup('delete-dashed', 500);
      ok(await t().call('delete_group', { target_group: { group_id: upperDashed(g.group_id) } }));
      expect((await listGroups()).some((x) => x.group_id === g.group_id)).toBe(false);
    });

    test('All Users cannot be deleted', async () => {
      expectError(
        await t().call('delete_group', { target_group: { group_id: ALL_USERS } }),
        'Cannot delete a system group',
      );
      expectError(
        await t().call('delete_group', { target_group: { group_id: dashed(ALL_USERS) } }),
        'Cannot delete a system group',
      );
      expect((await listGroups()).find((g) => g.group_id === ALL_USERS)?.is_system).toBe(true);
    });

    test('missing, malformed and unknown ids', async () => {
      for (const body of NO_GROUP_ID) expectError(await t().call('delete_group', body), MISSING);
      await expectErrors('delete_group', [
        [{ target_group: { group_id: 'zzz' } }, 'Invalid Group ID (zzz)'],
        [{ target_group: { group_id: UNKNOWN } }, `Invalid Group ID (${UNKNOWN})`],
      ]);
      expectTypeError(
        await t().call('delete_group', { target_group: { group_id: 7 } }),
        'target_group.group_id',
      );
    });
  });

  describe('add_user_group / remove_user_group', () => {
    test('add answers {}, the membership shows in get_users_group; a second add: already a member (32-hex ids)', async () => {
      const g = await createGroup('members', 60);
      const u = await createUser();
      const r = await add(u, g.group_id);
      expect({ status: r.statusCode, body: r.json() }).toEqual({ status: 200, body: {} });
      expect(await groupsOf(u)).toEqual([ALL_USERS, g.group_id].sort());
      const listed = ok(await t().call('get_users_group', { target_group: { group_id: g.group_id } }));
      expect(listed.users.map((x: { user_id: string }) => x.user_id)).toEqual([u]);

      expectError(await add(u, g.group_id), `User (${u}) is already a member of group (${g.group_id})`);
      expectError(
        await add(upperDashed(u), upperDashed(g.group_id)),
        `User (${u}) is already a member of group (${g.group_id})`,
      );
      expectError(await add(u, ALL_USERS), `User (${u}) is already a member of group (${ALL_USERS})`);
    });

    test('remove answers {}; a second remove: not a member (32-hex ids)', async () => {
      const g = await createGroup('leavers', 60);
      const u = await createUser();
      ok(await add(u, g.group_id));
      const r = await remove(dashed(u), dashed(g.group_id));
      expect({ status: r.statusCode, body: r.json() }).toEqual({ status: 200, body: {} });
      expect(await groupsOf(u)).toEqual([ALL_USERS]);
      expectError(await remove(u, g.group_id), `User (${u}) is not a member of group (${g.group_id})`);
      expectError(
        await remove(upperDashed(u), g.group_id),
        `User (${u}) is not a member of group (${g.group_id})`,
      );
    });

    test.each(['add_user_group', 'remove_user_group'])(
      '%s: missing, malformed and unknown ids, user first',
      async (op) => {
        const g = await createGroup(`ids-${op}`, 60);
        const u = await createUser();
        const call = (user_id: unknown, group_id: unknown) =>
          t().call(op, { target_user: { user_id }, target_group: { group_id } });
        for (const body of [
          {},
          { target_user: { user_id: u } },
          { target_group: { group_id: g.group_id } },
          { target_user: null, target_group: { group_id: g.group_id } },
          { target_user: { user_id: u }, target_group: {} },
          { target_user: { user_id: null }, target_group: { group_id: g.group_id } },
        ]) {
          expectError(await t().call(op, body), MISSING);
        }
        expectError(await call('abc', g.group_id), 'Invalid User ID (abc)');
        expectError(await call(UNKNOWN, g.group_id), `Invalid User ID (${UNKNOWN})`);
        expectError(await call(UNKNOWN, 'xyz'), `Invalid User ID (${UNKNOWN})`);
        expectError(await call('abc', UNKNOWN), 'Invalid User ID (abc)');
        expectError(await call(u, 'xyz'), 'Invalid Group ID (xyz)');
        expectError(await call(u, UNKNOWN), `Invalid Group ID (${UNKNOWN})`);
        expectError(await call(u, upperDashed(UNKNOWN)), `Invalid Group ID (${upperDashed(UNKNOWN)})`);
        expectTypeError(await call(123, g.group_id), 'target_user.user_id');
        expectTypeError(await call(u, true), 'target_group.group_id');
        expect(await groupsOf(u)).toEqual([ALL_USERS]);
      },
    );
  });

  describe('change_user_group', () => {
    test('by id: moves the user and answers {user} with its groups', async () => {
      const from = await createGroup('move-from', 70);
      const to = await createGroup('move-to', 71);
      const u = await createUser();
      ok(await add(u, from.group_id));
      const body = ok(await move(u, { group_id: from.group_id }, { group_id: dashed(to.group_id) }));
      expect(Object.keys(body)).toEqual(['user']);
      expect(Object.keys(body.user).sort()).toEqual(USER_KEYS);
      expect(body.user.user_id).toBe(u);
      expect(body.user.groups.map((g: { group_id: string }) => g.group_id).sort()).toEqual(
        [ALL_USERS, to.group_id].sort(),
      );
      expect(body.user.groups.find((g: { group_id: string }) => g.group_id === to.group_id)).toEqual({
        name: 'move-to',
        group_id: to.group_id,
      });
      expect(await groupsOf(u)).toEqual([ALL_USERS, to.group_id].sort());
    });

    test('by name (exact, trimmed), and by id and name mixed; the id wins when both are given', async () => {
      const a = await createGroup('Period A', 72);
      const b = await createGroup('Period B', 73);
      const u = await createUser();
      ok(await add(u, a.group_id));
      ok(await move(u, { name: 'Period A' }, { name: ' Period B ' }));
      expect(await groupsOf(u)).toEqual([ALL_USERS, b.group_id].sort());
      ok(await move(u, { group_id: b.group_id }, { name: 'Period A' }));
      expect(await groupsOf(u)).toEqual([ALL_USERS, a.group_id].sort());
      ok(await move(u, { name: 'Period A' }, { group_id: b.group_id }));
      expect(await groupsOf(u)).toEqual([ALL_USERS, b.group_id].sort());
      // group_id wins over a name that names another group
      ok(
        await move(u, { group_id: b.group_id, name: 'Period A' }, { group_id: a.group_id, name: 'Period B' }),
      );
      expect(await groupsOf(u)).toEqual([ALL_USERS, a.group_id].sort());
      // names are case-sensitive
      expectError(await move(u, { name: 'period a' }, { name: 'Period B' }), 'Invalid Group ID (period a)');
    });

    test('missing parameters', async () => {
      const u = await createUser();
      const ref = { group_id: ALL_USERS };
      for (const body of [
        {},
        { old_group: ref, new_group: ref },
        { target_user: {}, old_group: ref, new_group: ref },
        { target_user: { user_id: u }, new_group: ref },
        { target_user: { user_id: u }, old_group: ref },
        { target_user: { user_id: u }, old_group: {}, new_group: ref },
        { target_user: { user_id: u }, old_group: ref, new_group: { group_id: null, name: null } },
      ]) {
        expectError(await t().call('change_user_group', body), MISSING);
      }
    });

    test('errors come in the documented order', async () => {
      const old = await createGroup('order-old', 74);
      const next = await createGroup('order-new', 75);
      const u = await createUser();
      const member = { group_id: old.group_id };
      const target = { group_id: next.group_id };

      // 1. the user: malformed or unknown, before anything about the groups
      expectError(
        await move('nobody', { group_id: 'bad' }, { name: 'no such group' }),
        'Invalid User ID (nobody)',
      );
      expectError(
        await move(UNKNOWN, { group_id: 'bad' }, { name: 'no such group' }),
        `Invalid User ID (${UNKNOWN})`,
      );
      // 2. the old group, as given (id or name), before the new one
      expectError(await move(u, { group_id: 'bad' }, { name: 'no such group' }), 'Invalid Group ID (bad)');
      expectError(
        await move(u, { name: 'no such group' }, { group_id: 'bad' }),
        'Invalid Group ID (no such group)',
      );
      expectError(await move(u, { group_id: UNKNOWN }, { group_id: 'bad' }), `Invalid Group ID (${UNKNOWN})`);
      // 3. the new group
      expectError(await move(u, member, { group_id: 'bad' }), 'Invalid Group ID (bad)');
      expectError(await move(u, member, { name: 'no such group' }), 'Invalid Group ID (no such group)');
      // 4. not a member of the old group (even though also a member of the new one)
      ok(await add(u, next.group_id));
      expectError(await move(u, member, target), `User (${u}) is not a member of group (${old.group_id})`);
      expectError(
        await move(u, { name: 'order-old' }, { name: 'order-new' }),
        `User (${u}) is not a member of group (${old.group_id})`,
      );
      // 5. already a member of the new group: the move fails as a whole, the old membership stays
      ok(await add(u, old.group_id));
      expectError(
        await move(dashed(u), member, target),
        `User (${u}) is already a member of group (${next.group_id})`,
      );
      expect(await groupsOf(u)).toEqual([ALL_USERS, old.group_id, next.group_id].sort());
      // old and new the same group
      expectError(
        await move(u, member, { name: 'order-old' }),
        `User (${u}) is already a member of group (${old.group_id})`,
      );
      expect(await groupsOf(u)).toEqual([ALL_USERS, old.group_id, next.group_id].sort());
      ok(await remove(u, next.group_id));
      expectError(
        await move(u, { group_id: next.group_id }, { group_id: next.group_id }),
        `User (${u}) is not a member of group (${next.group_id})`,
      );
      expect(await groupsOf(u)).toEqual([ALL_USERS, old.group_id].sort());
      // types are still strict
      expectTypeError(await move(u, { group_id: 5 }, target), 'old_group.group_id');
      expectTypeError(await move(u, member, { name: 5 }), 'new_group.name');
    });

    test('out of All Users and back', async () => {
      const g = await createGroup('all-users-swap', 76);
      const u = await createUser();
      ok(await move(u, { group_id: ALL_USERS }, { group_id: g.group_id }));
      expect(await groupsOf(u)).toEqual([g.group_id]);
      ok(await move(u, { group_id: g.group_id }, { name: 'All Users' }));
      expect(await groupsOf(u)).toEqual([ALL_USERS]);
    });
  });

  describe('get_users_group', () => {
    let group: GroupJson;
    const members: string[] = [];
    beforeAll(async () => {
      group = await createGroup('paged', 80);
      const base = Date.UTC(2026, 0, 1);
      // created out of id order, two with the same instant (then ordered by user_id)
      for (const offset of [3, 1, 4, 1, 5]) {
        const u = await createUser({ created: new Date(base + offset * 1000) });
        ok(await add(u, group.group_id));
        members.push(u);
      }
      await createUser(); // not a member
    });
    const expected = () =>
      members
        .map((id, i) => ({ id, created: [3, 1, 4, 1, 5][i] }))
        .sort((a, b) => a.created - b.created || a.id.localeCompare(b.id))
        .map((x) => x.id);
    const page = async (extra: Record<string, unknown>) => {
      const body = ok(
        await t().call('get_users_group', { target_group: { group_id: group.group_id }, ...extra }),
      );
      expect(Object.keys(body).sort()).toEqual(['total', 'users']);
      return {
        ids: body.users.map((u: { user_id: string }) => u.user_id),
        total: body.total,
        users: body.users,
      };
    };

    test('without page: every member, by created then user_id, in the user shape', async () => {
      const all = await page({});
      expect(all.total).toBe(5);
      expect(all.ids).toEqual(expected());
      for (const u of all.users) {
        expect(Object.keys(u).sort()).toEqual(USER_KEYS);
        expect(u.groups.map((g: { group_id: string }) => g.group_id).sort()).toEqual(
          [ALL_USERS, group.group_id].sort(),
        );
      }
      // page_size alone does not page
      expect((await page({ page_size: 2 })).ids).toEqual(expected());
      expect((await page({ page: null, page_size: null })).ids).toEqual(expected());
    });

    test('pages of page_size; the default is 100; past the end is empty; total counts every member', async () => {
      expect(await page({ page: 1, page_size: 2 })).toMatchObject({ ids: expected().slice(0, 2), total: 5 });
      expect(await page({ page: 2, page_size: 2 })).toMatchObject({ ids: expected().slice(2, 4), total: 5 });
      expect(await page({ page: 3, page_size: 2 })).toMatchObject({ ids: expected().slice(4), total: 5 });
      expect(await page({ page: 4, page_size: 2 })).toMatchObject({ ids: [], total: 5 });
      expect(await page({ page: 1 })).toMatchObject({ ids: expected(), total: 5 });
      expect(await page({ page: 2 })).toMatchObject({ ids: [], total: 5 });
      expect(await page({ page: 1, page_size: 1000 })).toMatchObject({ ids: expected(), total: 5 });
      expect(await page({ page: 1e15, page_size: 1000 })).toMatchObject({ ids: [], total: 5 });
    });

    test('out-of-range paging: page and page_size must be positive; wrong types are 400s', async () => {
      const call = (extra: Record<string, unknown>) =>
        t().call('get_users_group', { target_group: { group_id: group.group_id }, ...extra });
      for (const extra of [
        { page: 0 },
        { page: -1 },
        { page: 1, page_size: 0 },
        { page: 1, page_size: 1001 },
        { page_size: -5 },
      ]) {
        expectError(await call(extra), BAD_PAGING);
      }
      expectTypeError(await call({ page: '1' }), 'page');
      expectTypeError(await call({ page: 1, page_size: 2.5 }), 'page_size');
    });

    test('an empty group; missing, malformed and unknown ids', async () => {
      const empty = await createGroup('empty', 81);
      const body = ok(
        await t().call('get_users_group', { target_group: { group_id: dashed(empty.group_id) } }),
      );
      expect(body).toEqual({ users: [], total: 0 });
      for (const b of NO_GROUP_ID) expectError(await t().call('get_users_group', b), MISSING);
      await expectErrors('get_users_group', [
        [{ target_group: { group_id: 'g1' } }, 'Invalid Group ID (g1)'],
        [{ target_group: { group_id: UNKNOWN } }, `Invalid Group ID (${UNKNOWN})`],
        // the group is checked before the paging
        [{ target_group: { group_id: UNKNOWN }, page: 0 }, `Invalid Group ID (${UNKNOWN})`],
      ]);
    });

    test('All Users lists every user', async () => {
      const body = ok(await t().call('get_users_group', { target_group: { group_id: ALL_USERS } }));
      const count = await t()
        .database.db.selectFrom('user_groups')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('group_id', '=', ALL_USERS_GROUP_ID)
        .executeTakeFirstOrThrow();
      expect(body.total).toBe(Number(count.n));
      expect(body.users).toHaveLength(body.total);
    });
  });

  describe('concurrency', () => {
    const statuses = (responses: LightMyRequestResponse[]) => responses.map((r) => r.statusCode);
    /** `n` calls at once: `call(0)` to `call(n - 1)`. */
    const racing = (n: number, call: (i: number) => Promise<LightMyRequestResponse>) =>
      Promise.all(Array.from({ length: n }, (_, i) => call(i)));
    /** 20 opposite moves of `user` between `a` and `b` at once. */
    const swinging = (user: string, a: GroupJson, b: GroupJson) =>
      racing(20, (i) =>
        i % 2
          ? move(user, { group_id: b.group_id }, { group_id: a.group_id })
          : move(user, { group_id: a.group_id }, { group_id: b.group_id }),
      );

    test('20 parallel create_group with one name: exactly one 200, the others Group (<name>) already exists', async () => {
      const responses = await racing(20, (i) =>
        t().call('create_group', { target_group: { name: 'Raced', priority: 10 + i } }),
      );
      expect(statuses(responses).filter((s) => s === 200)).toHaveLength(1);
      for (const r of responses.filter((x) => x.statusCode !== 200))
        expectError(r, 'Group (Raced) already exists');
      expect((await listGroups()).filter((g) => g.name === 'Raced')).toHaveLength(1);
    });

    test('20 parallel add_user_group of one pair: one 200, the others already a member, one row', async () => {
      const g = await createGroup('raced-members', 90);
      const u = await createUser();
      const responses = await racing(20, () => add(u, g.group_id));
      expect(statuses(responses).filter((s) => s === 200)).toHaveLength(1);
      for (const r of responses.filter((x) => x.statusCode !== 200))
        expectError(r, `User (${u}) is already a member of group (${g.group_id})`);
      const rows = await t()
        .database.db.selectFrom('user_groups')
        .selectAll()
        .where('user_id', '=', dashed(u))
        .where('group_id', '=', dashed(g.group_id))
        .execute();
      expect(rows).toHaveLength(1);
    });

    test('10 parallel identical change_user_group: one 200, the others not/already a member; the user is in the new group once', async () => {
      const from = await createGroup('raced-from', 91);
      const to = await createGroup('raced-to', 92);
      const u = await memberOf(from);
      const responses = await racing(10, () =>
        move(u, { group_id: from.group_id }, { group_id: to.group_id }),
      );
      expect(statuses(responses).filter((s) => s === 200)).toHaveLength(1);
      const allowed = [
        `User (${u}) is not a member of group (${from.group_id})`,
        `User (${u}) is already a member of group (${to.group_id})`,
      ];
      for (const r of responses.filter((x) => x.statusCode !== 200)) {
        expect(r.statusCode).toBe(400);
        expect(allowed).toContain(r.json().error_message);
      }
      const rows = await t()
        .database.db.selectFrom('user_groups')
        .select('group_id')
        .where('user_id', '=', dashed(u))
        .execute();
      expect(rows.map((r) => toKasmId(r.group_id)).sort()).toEqual([ALL_USERS, to.group_id].sort());
    });

    test('opposite moves racing never deadlock (no 500) and leave the user in exactly one of the two groups', async () => {
      const a = await createGroup('swing-a', 93);
      const b = await createGroup('swing-b', 94);
      const u = await memberOf(a);
      const responses = await swinging(u, a, b);
      expect(statuses(responses).every((s) => s === 200 || s === 400)).toBe(true);
      expect(statuses(responses)).toContain(200);
      const groups = await groupsOf(u);
      expect(groups).toHaveLength(2);
      expect(groups).toContain(ALL_USERS);
      expect([a.group_id, b.group_id]).toContain(groups.find((g) => g !== ALL_USERS));

      // A member of both: every opposite move is refused (each would otherwise wait on the other's rows).
      const v = await memberOf(a, b);
      const refused = await swinging(v, a, b);
      for (const [i, r] of refused.entries())
        expectError(r, `User (${v}) is already a member of group (${i % 2 ? a.group_id : b.group_id})`);
      expect(await groupsOf(v)).toEqual([ALL_USERS, a.group_id, b.group_id].sort());
    });
  });
});
