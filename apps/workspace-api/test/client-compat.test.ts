import { openForTheseTests } from '@platform/testing';
import { startTestServer } from './support/server';

/**
 * The calls a real Kasm helper library (`model/kasm.py` of a Flask app) makes, in its order, over
 * real HTTP with `requests`-style JSON bodies, asserting exactly the keys and formats it reads.
 */
describe('a Kasm client library, call by call', () => {
  const server = openForTheseTests(() => startTestServer(), 60_000);

  const post = async (operation: string, body: Record<string, unknown> = {}) => {
    const response = await fetch(`${server().baseUrl}/api/public/${operation}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        api_key: server().admin.api_key,
        api_key_secret: server().admin.api_key_secret,
        ...body,
      }),
    });
    return { status: response.status, json: (await response.json()) as Record<string, any> };
  };
  // What Python's datetime.fromisoformat accepts (3.7+), and what it rejects on <= 3.10: a trailing Z.
  const pythonIsoDate = /^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d{6})?$/;

  test('authenticate → find user → create → groups → add to group → password → names → delete', async () => {
    // authenticate(config): only the status matters
    expect((await post('validate_credentials')).status).toBe(200);

    // get_users(config): resp.json()['users'], then a case-insensitive username match
    const before = await post('get_users');
    expect(before.status).toBe(200);
    expect(Array.isArray(before.json.users)).toBe(true);
    expect(
      before.json.users.find((u: { username: string }) => u.username.toLowerCase() === 'jdoe2026'),
    ).toBeUndefined();

    // create_user(config, uid, first, last, pw): the exact body the client sends
    const created = await post('create_user', {
      target_user: {
        username: 'JDoe2026',
        first_name: 'John',
        last_name: 'Doe',
        locked: false,
        disabled: false,
        organization: 'All Users',
        phone: '123-456-7890',
        password: '123Qwerty!',
      },
    });
    expect(created.status).toBe(200);
    const user = created.json.user;
    expect(user.username).toBe('jdoe2026');
    expect(user.user_id).toMatch(/^[0-9a-f]{32}$/);
    expect(user).toMatchObject({
      organization: 'All Users',
      phone: '123-456-7890',
      first_name: 'John',
      last_name: 'Doe',
      locked: false,
      disabled: false,
      realm: 'local',
    });
    expect(user).not.toHaveProperty('password');

    // main.py /kasm_users: fromisoformat(user['last_session']) for every user, null allowed
    const listed = await post('get_users');
    const found = listed.json.users.find(
      (u: { username: string }) => u.username.toLowerCase() === 'JDoe2026'.toLowerCase(),
    );
    expect(found.user_id).toBe(user.user_id);
    for (const u of listed.json.users) {
      expect(u.last_session === null || pythonIsoDate.test(u.last_session)).toBe(true);
      expect(u.created).toMatch(pythonIsoDate);
      for (const key of ['username', 'first_name', 'last_name', 'last_session', 'user_id'])
        expect(u).toHaveProperty(key);
    }

    // get_user_details(config, user_id): resp.json()['user']['groups'] with name and group_id
    const details = await post('get_user', { target_user: { user_id: user.user_id } });
    expect(details.json.user.groups).toEqual([
      { name: 'All Users', group_id: '68d557ac4cac42cca9f31c7c853de0f3' },
    ]);

    // update_user_group(config, user_id, new_group): get_groups, find by name, add_user_group
    await post('create_group', { target_group: { name: 'Students', priority: 50, description: 'CSP' } });
    const groups = await post('get_groups');
    for (const g of groups.json.groups)
      expect(Object.keys(g).sort()).toEqual(['description', 'group_id', 'is_system', 'name', 'priority']);
    const students = groups.json.groups.find((g: { name: string }) => g.name === 'Students');
    expect(students.group_id).toMatch(/^[0-9a-f]{32}$/);
    const added = await post('add_user_group', {
      target_user: { user_id: user.user_id },
      target_group: { group_id: students.group_id },
    });
    expect(added).toEqual({ status: 200, json: {} });
    const withGroup = await post('get_user', { target_user: { user_id: user.user_id } });
    expect(withGroup.json.user.groups.map((g: { name: string }) => g.name).sort()).toEqual([
      'All Users',
      'Students',
    ]);

    // update_user_password(config, user_id, pw) and the older update_user with username + password
    expect(
      (
        await post('update_user_password', {
          target_user: { user_id: user.user_id, password: 'N3w-Passw0rd!' },
        })
      ).status,
    ).toBe(200);
    const older = await post('update_user', {
      target_user: { user_id: user.user_id, username: 'jdoe2026', password: 'An0ther-Pass!' },
    });
    expect(older.status).toBe(200);
    expect(older.json.user.user_id).toBe(user.user_id);

    // update_user_name(config, user_id, first, last)
    const renamed = await post('update_user_name', {
      target_user: { user_id: user.user_id, first_name: 'Jonathan', last_name: 'Doe-Smith' },
    });
    expect(renamed.status).toBe(200);
    expect(renamed.json.user).toMatchObject({
      first_name: 'Jonathan',
      last_name: 'Doe-Smith',
      username: 'jdoe2026',
    });

    // delete_user(config, user_id): target_user + force: false, 200 counts as success
    expect(await post('delete_user', { target_user: { user_id: user.user_id }, force: false })).toEqual({
      status: 200,
      json: {},
    });
    const after = await post('get_users');
    expect(after.json.users.find((u: { user_id: string }) => u.user_id === user.user_id)).toBeUndefined();
    expect(after.json.total).toBe(before.json.total);
  });
});
