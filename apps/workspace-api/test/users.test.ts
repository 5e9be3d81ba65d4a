import type { LightMyRequestResponse } from 'fastify';
import { verify } from 'argon2';
import { parseId } from '../src/wire/kasm';
import { openForTheseTests } from '@platform/testing';
import { buildTestApp } from './support/app';
import { dashed, HEX32, KASM_DATE, LISTED_USER_KEYS, UNKNOWN, USER_KEYS } from './support/kasm';

const ALL_USERS = { name: 'All Users', group_id: '68d557ac4cac42cca9f31c7c853de0f3' };
const MALFORMED = ['nope', '123', 'g'.repeat(32), `${UNKNOWN}0`, '0123-4567', `${UNKNOWN.slice(0, 31)}z`];
const GOOD_PASSWORD = 'Secret-123';
/** The optional fields of a user created without them. */
const DEFAULTS = {
  first_name: null,
  last_name: null,
  organization: null,
  phone: null,
  notes: null,
  locked: false,
  disabled: false,
};
/** Every optional field of a user, null: "the default" on create, "leave unchanged" on update. */
const NULLS = {
  password: null,
  first_name: null,
  last_name: null,
  organization: null,
  phone: null,
  notes: null,
  locked: null,
  disabled: null,
};

/** Each password rule with a password that breaks it (and only rules after it), in the contract's order. */
const RULES: [string, string][] = [
  ['abcdefgh!A', 'Your password must contain at least one number.'],
  ['aB1!', 'Your password must be at least 8 characters long'],
  ['abcdefG1', 'Your password must contain at least one special character.'],
  ['ABCDEFG1!', 'Your password must contain at least one lower case character.'],
  ['abcdefg1!', 'Your password must contain at least one upper case character.'],
];
/** Passwords breaking several rules: the first rule in the order decides. */
const FIRST_RULE_WINS: [string, string][] = [
  ['', 'Your password must contain at least one number.'],
  ['abc', 'Your password must contain at least one number.'],
  ['a1', 'Your password must be at least 8 characters long'],
  // 7 characters, 11 UTF-16 units: length counts characters.
  ['😀😀😀😀1aA', 'Your password must be at least 8 characters long'],
  ['abcdefg1', 'Your password must contain at least one special character.'],
  ['ABCDEFG1 ', 'Your password must contain at least one lower case character.'],
];
/** Passwords that follow every rule (every special character counts, a space too). */
const VALID_PASSWORDS = [
  'Secret-123',
  '😀😀😀😀1aA!',
  'Abcdefg1:',
  'Abcdefg1;',
  'Abcdefg1?',
  'Abcdefg1<',
  'Abcdefg1 ',
  'Abcdefg1~',
  'Abcdefg1\\',
  'Abcdefg1"',
];

type User = Record<string, unknown> & {
  user_id: string;
  username: string;
  locked: boolean;
  groups: unknown[];
};

const t = openForTheseTests(() => buildTestApp(), 60_000);
let seq = 0;
const uniqueName = (prefix = 'user') => `${prefix}${++seq}_${Date.now().toString(36)}`;

async function ok(op: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const r = await t().call(op, body);
  expect({ status: r.statusCode, body: r.json() }).toEqual({ status: 200, body: expect.any(Object) });
  return r.json();
}

async function expectError(
  response: LightMyRequestResponse | Promise<LightMyRequestResponse>,
  status: number,
  message: string | RegExp,
) {
  const r = await response;
  const body = r.json();
  expect({ status: r.statusCode, keys: Object.keys(body) }).toEqual({ status, keys: ['error_message'] });
  if (typeof message === 'string') expect(body.error_message).toBe(message);
  else expect(body.error_message).toMatch(message);
}

const refused = (op: string, body: Record<string, unknown>, status: number, message: string | RegExp) =>
  expectError(t().call(op, body), status, message);

/** Each body refused by `op` with a 400 and its message, one after the other. */
async function refusedEach(op: string, cases: [Record<string, unknown>, string][]) {
  for (const [body, message] of cases) await refused(op, body, 400, message);
}

async function createUser(fields: Record<string, unknown> = {}): Promise<User> {
  return (await ok('create_user', { target_user: { username: uniqueName(), ...fields } })).user as User;
}

const dbId = (userId: string) => parseId(userId)!;
const userRow = (userId: string) =>
  t().database.db.selectFrom('users').selectAll().where('id', '=', dbId(userId)).executeTakeFirst();
const memberships = (userId: string) =>
  t().database.db.selectFrom('user_groups').select('group_id').where('user_id', '=', dbId(userId)).execute();
const countUsers = async () =>
  Number(
    (
      await t()
        .database.db.selectFrom('users')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );
/** `fields` as stored: each cut to 64 characters. */
const cutTo64 = (fields: Record<string, string>) =>
  Object.fromEntries(Object.entries(fields).map(([name, value]) => [name, value.slice(0, 64)]));

/**
 * The refusals of an operation on one user given with `fields`: no target or no user_id is
 * `Invalid Request`, an unknown or malformed id `Unknown User`, and `wrongType` its type error.
 */
async function refusesBadTargets(
  op: string,
  fields: Record<string, unknown>,
  [wrongFields, typeError]: [Record<string, unknown>, string],
) {
  for (const body of [{}, { target_user: null }, { target_user: fields }])
    await refused(op, body, 400, 'Invalid Request');
  for (const id of [UNKNOWN, ...MALFORMED])
    await refused(op, { target_user: { user_id: id, ...fields } }, 400, 'Unknown User');
  const user = await createUser();
  await refused(op, { target_user: { user_id: user.user_id, ...wrongFields } }, 400, typeError);
}

/** A user as get_user and get_users show it to an admin key: with their (here no) live sessions. */
const listed = (user: User) => ({ ...user, kasms: [] });

function expectKasmUser(user: Record<string, unknown>, keys = USER_KEYS) {
  expect(Object.keys(user).sort()).toEqual(keys);
  expect(user.user_id).toMatch(HEX32);
  expect(user.created).toMatch(KASM_DATE);
  expect(user.realm).toBe('local');
  expect(JSON.stringify(user)).not.toMatch(/password|argon2|hash/i);
}

describe('create_user', () => {
  test('answers {user} with exactly Kasm’s keys, a 32-hex id, Kasm dates, realm local and All Users', async () => {
    const name = uniqueName('shape');
    const body = await ok('create_user', {
      target_user: {
        username: name,
        password: GOOD_PASSWORD,
        first_name: 'Ada',
        last_name: 'Lovelace',
        organization: 'All Users',
        phone: '123-456-7890',
        notes: 'n',
      },
    });
    expect(Object.keys(body)).toEqual(['user']);
    const user = body.user as User;
    expectKasmUser(user);
    expect(user).toEqual({
      user_id: expect.stringMatching(HEX32),
      username: name,
      first_name: 'Ada',
      last_name: 'Lovelace',
      locked: false,
      disabled: false,
      organization: 'All Users',
      phone: '123-456-7890',
      notes: 'n',
      realm: 'local',
      last_session: null,
      created: expect.stringMatching(KASM_DATE),
      groups: [ALL_USERS],
    });
    // `created` is UTC now.
    const created = Date.parse(`${String(user.created).replace(' ', 'T')}Z`);
    expect(Math.abs(created - Date.now())).toBeLessThan(60_000);
  });

  test('optional fields default to null and false; null means the default too', async () => {
    const plain = await createUser();
    expect(plain).toMatchObject(DEFAULTS);
    const nulls = await createUser(NULLS);
    expect(nulls).toMatchObject(DEFAULTS);
    expect((await userRow(nulls.user_id))!.password_hash).toBeNull();
  });

  test('the username is trimmed and lowercased', async () => {
    const name = uniqueName('trim');
    const user = await createUser({ username: `  ${name.toUpperCase()}\t ` });
    expect(user.username).toBe(name);
    expect((await userRow(user.user_id))!.username).toBe(name);
  });

  test('a username taken in another case or with spaces: Error creating user (<lowercased>): (User already exists)', async () => {
    const name = uniqueName('dup');
    await createUser({ username: name });
    for (const variant of [name, name.toUpperCase(), ` ${name} `]) {
      await refused(
        'create_user',
        { target_user: { username: variant } },
        400,
        `Error creating user (${name}): (User already exists)`,
      );
    }
    expect(
      await t().database.db.selectFrom('users').select('id').where('username', '=', name).execute(),
    ).toHaveLength(1);
  });

  test('first_name, last_name, phone and organization are cut to 64 characters; notes are not', async () => {
    const long = (c: string) => c.repeat(100);
    const cut = { first_name: long('f'), last_name: long('l'), phone: long('9'), organization: long('o') };
    const user = await createUser({ ...cut, notes: long('n') });
    expect(user).toMatchObject({ ...cutTo64(cut), notes: 'n'.repeat(100) });
    const row = await userRow(user.user_id);
    expect(row).toMatchObject(cutTo64(cut));
  });

  test('every new user joins All Users (one membership row)', async () => {
    const user = await createUser();
    expect(await memberships(user.user_id)).toEqual([{ group_id: dbId(ALL_USERS.group_id) }]);
  });

  test('the password is stored as an argon2id hash with the configured cost, never in clear', async () => {
    const user = await createUser({ password: GOOD_PASSWORD });
    const row = (await userRow(user.user_id))!;
    expect(row.password_hash).toMatch(/^\$argon2id\$v=19\$m=1024,t=1,/);
    expect(row.password_hash).not.toContain(GOOD_PASSWORD);
    expect(await verify(row.password_hash!, GOOD_PASSWORD)).toBe(true);
    expect(await verify(row.password_hash!, 'Other-123')).toBe(false);
  });

  test('without a password (absent or empty) no hash is stored', async () => {
    expect((await userRow((await createUser()).user_id))!.password_hash).toBeNull();
    expect((await userRow((await createUser({ password: '' })).user_id))!.password_hash).toBeNull();
  });

  test('password rules are not checked on create by default (real clients send simple passwords)', async () => {
    const user = await createUser({ password: 'abc' });
    expect(await verify((await userRow(user.user_id))!.password_hash!, 'abc')).toBe(true);
  });

  test('locked: true and disabled: true are kept (a password on create does not unlock)', async () => {
    const user = await createUser({ locked: true, disabled: true, password: GOOD_PASSWORD });
    expect(user).toMatchObject({ locked: true, disabled: true });
    expect((await ok('get_user', { target_user: { user_id: user.user_id } })).user).toMatchObject({
      locked: true,
      disabled: true,
    });
  });

  test('unknown fields are ignored (realm stays local)', async () => {
    const user = await createUser({ realm: 'ldap', company_id: 'x', password_hash: 'mine' });
    expect(user.realm).toBe('local');
    expect((await userRow(user.user_id))!.password_hash).toBeNull();
  });

  test('no target_user, no username, null or blank username: Invalid Request: Missing required parameters', async () => {
    const before = await countUsers();
    for (const body of [
      {},
      { target_user: null },
      { target_user: {} },
      { target_user: { username: null } },
      { target_user: { username: '' } },
      { target_user: { username: '   ', password: 'x' } },
    ]) {
      await refused('create_user', body, 400, 'Invalid Request: Missing required parameters');
    }
    expect(await countUsers()).toBe(before);
  });

  test('wrong types are a 400 naming the field (no coercion)', async () => {
    const before = await countUsers();
    await refusedEach('create_user', [
      [{ target_user: { username: 42 } }, 'target_user.username must be a string'],
      [{ target_user: { username: uniqueName(), locked: 'yes' } }, 'target_user.locked must be a boolean'],
      [{ target_user: { username: uniqueName(), disabled: 0 } }, 'target_user.disabled must be a boolean'],
      [
        { target_user: { username: uniqueName(), password: 12345678 } },
        'target_user.password must be a string',
      ],
      [
        { target_user: { username: uniqueName(), first_name: ['a'] } },
        'target_user.first_name must be a string',
      ],
      [{ target_user: 'bob' }, 'target_user must be an object'],
    ]);
    expect(await countUsers()).toBe(before);
  });
});

describe('text the database cannot store', () => {
  test('a NUL character in any text field is a 400 naming the field, never a 500', async () => {
    const nul = (field: string) => `target_user.${field} must not contain NUL characters`;
    const before = await countUsers();
    await refusedEach('create_user', [
      [{ target_user: { username: 'nul\u0000name' } }, nul('username')],
      [{ target_user: { username: uniqueName(), notes: 'a\u0000b' } }, nul('notes')],
    ]);
    expect(await countUsers()).toBe(before);
    const user = await createUser();
    await refusedEach('update_user', [
      [{ target_user: { user_id: user.user_id, first_name: '\u0000' } }, nul('first_name')],
    ]);
    await refusedEach('update_user_name', [
      [{ target_user: { user_id: user.user_id, last_name: 'x\u0000' } }, nul('last_name')],
    ]);
    await refusedEach('get_user', [[{ target_user: { username: 'nul\u0000name' } }, nul('username')]]);
    expect((await ok('get_user', { target_user: { user_id: user.user_id } })).user).toEqual(listed(user));
  });
});

describe('create_user with ENFORCE_PASSWORD_RULES_ON_CREATE', () => {
  const strict = openForTheseTests(() => buildTestApp({ ENFORCE_PASSWORD_RULES_ON_CREATE: 'yes' }), 60_000);

  test.each([...RULES, ...FIRST_RULE_WINS.filter(([p]) => p !== '')])(
    '%j → %s',
    async (password, message) => {
      await expectError(
        strict().call('create_user', { target_user: { username: uniqueName('strict'), password } }),
        400,
        message,
      );
    },
  );

  test('nothing is created for a refused password; a good one, or none, is accepted', async () => {
    const name = uniqueName('strict');
    await expectError(
      strict().call('create_user', { target_user: { username: name, password: 'abc' } }),
      400,
      'Your password must contain at least one number.',
    );
    expect(
      await strict().database.db.selectFrom('users').select('id').where('username', '=', name).execute(),
    ).toEqual([]);
    expect(
      (await strict().call('create_user', { target_user: { username: name, password: GOOD_PASSWORD } }))
        .statusCode,
    ).toBe(200);
    expect(
      (await strict().call('create_user', { target_user: { username: uniqueName('strict') } })).statusCode,
    ).toBe(200);
  });
});

describe('get_user', () => {
  let user: User;
  beforeAll(async () => {
    user = await createUser({ username: uniqueName('Getter'), first_name: 'G', password: GOOD_PASSWORD });
  });

  test('by user_id: the same user create answered', async () => {
    const body = await ok('get_user', { target_user: { user_id: user.user_id } });
    expect(Object.keys(body)).toEqual(['user']);
    expectKasmUser(body.user as User, LISTED_USER_KEYS);
    expect(body.user).toEqual(listed(user));
  });

  test('dashed and upper-case ids are accepted', async () => {
    for (const id of [dashed(user.user_id), user.user_id.toUpperCase(), dashed(user.user_id).toUpperCase()]) {
      expect((await ok('get_user', { target_user: { user_id: id } })).user).toEqual(listed(user));
    }
  });

  test('by username, trimmed and case-insensitive', async () => {
    expect((await ok('get_user', { target_user: { username: user.username } })).user).toEqual(listed(user));
    expect(
      (await ok('get_user', { target_user: { username: ` ${user.username.toUpperCase()} ` } })).user,
    ).toEqual(listed(user));
  });

  test('user_id wins over username; a null user_id falls back to username', async () => {
    const other = await createUser();
    expect(
      (await ok('get_user', { target_user: { user_id: user.user_id, username: other.username } })).user,
    ).toEqual(listed(user));
    expect((await ok('get_user', { target_user: { user_id: null, username: other.username } })).user).toEqual(
      listed(other),
    );
  });

  test('no target: Invalid Request', async () => {
    for (const body of [
      {},
      { target_user: null },
      { target_user: {} },
      { target_user: { user_id: null, username: null } },
      { target_user: { username: '' } },
    ]) {
      await refused('get_user', body, 400, 'Invalid Request');
    }
  });

  test('unknown and malformed ids, unknown usernames: Unknown User', async () => {
    for (const id of [UNKNOWN, dashed(UNKNOWN), ...MALFORMED])
      await refused('get_user', { target_user: { user_id: id } }, 400, 'Unknown User');
    await refused('get_user', { target_user: { username: uniqueName('nobody') } }, 400, 'Unknown User');
  });

  test('an id that is not a string is a 400 type error', async () => {
    await refused('get_user', { target_user: { user_id: 5 } }, 400, 'target_user.user_id must be a string');
    await refused(
      'get_user',
      { target_user: { username: true } },
      400,
      'target_user.username must be a string',
    );
  });
});

describe('get_users', () => {
  beforeAll(async () => {
    // More than the default page size, some sharing one `created` (one statement) so ids break ties.
    await t()
      .database.db.insertInto('users')
      .values(
        Array.from({ length: 105 }, () => ({
          username: uniqueName('bulk'),
          password_hash: '$argon2id$v=19$m=1024,t=1,p=4$secret',
        })),
      )
      .execute();
    await createUser({ password: GOOD_PASSWORD });
  });

  test('without page: every user, ordered by created then user_id, with total; no password or hash anywhere', async () => {
    const r = await t().call('get_users', {});
    expect(r.statusCode).toBe(200);
    expect(r.body).not.toMatch(/password|argon2|hash/i);
    const body = r.json() as { users: User[]; total: number };
    expect(Object.keys(body).sort()).toEqual(['total', 'users']);
    const total = await countUsers();
    expect(total).toBeGreaterThan(106);
    expect(body.total).toBe(total);
    expect(body.users).toHaveLength(total);
    for (const user of body.users) {
      expectKasmUser(user, LISTED_USER_KEYS);
      expect(user.last_session).toBeNull();
      expect(user.groups).toEqual(expect.any(Array));
    }
    const key = (u: User) => `${String(u.created)}|${u.user_id}`;
    const sorted = [...body.users].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
    expect(body.users.map((u) => u.user_id)).toEqual(sorted.map((u) => u.user_id));
    // Some users share a creation time: the id decides between them.
    expect(new Set(body.users.map((u) => u.created)).size).toBeLessThan(body.users.length);
  });

  test('users created through the API carry their groups', async () => {
    const user = await createUser();
    const { users } = (await ok('get_users', {})) as { users: User[] };
    expect(users.find((u) => u.user_id === user.user_id)).toEqual(listed(user));
    expect(users[users.length - 1].user_id).toBe(user.user_id);
  });

  test('pages are slices of the full ordering; total counts all users; past the end is empty', async () => {
    const all = ((await ok('get_users', {})) as { users: User[] }).users.map((u) => u.user_id);
    const page = async (p: number, size?: number) => {
      const body = (await ok('get_users', {
        page: p,
        ...(size === undefined ? {} : { page_size: size }),
      })) as { users: User[]; total: number };
      expect(body.total).toBe(all.length);
      return body.users.map((u) => u.user_id);
    };
    expect(await page(1, 2)).toEqual(all.slice(0, 2));
    expect(await page(2, 2)).toEqual(all.slice(2, 4));
    expect(await page(3, 7)).toEqual(all.slice(14, 21));
    expect(await page(1, 1)).toEqual(all.slice(0, 1));
    expect(await page(1, 1000)).toEqual(all.slice(0, 1000));
    const lastPage = Math.ceil(all.length / 10);
    expect(await page(lastPage, 10)).toEqual(all.slice((lastPage - 1) * 10));
    expect(await page(lastPage + 1, 10)).toEqual([]);
    expect(await page(1e15, 1000)).toEqual([]);
  });

  test('page without page_size: 100 users a page', async () => {
    const all = ((await ok('get_users', {})) as { users: User[] }).users.map((u) => u.user_id);
    expect(all.length).toBeGreaterThan(100);
    const first = ((await ok('get_users', { page: 1 })) as { users: User[] }).users.map((u) => u.user_id);
    expect(first).toEqual(all.slice(0, 100));
    const second = ((await ok('get_users', { page: 2, page_size: null })) as { users: User[] }).users.map(
      (u) => u.user_id,
    );
    expect(second).toEqual(all.slice(100, 200));
  });

  test('page_size without page, or a null page: still every user', async () => {
    const total = await countUsers();
    expect(((await ok('get_users', { page_size: 5 })) as { users: User[] }).users).toHaveLength(total);
    expect(((await ok('get_users', { page: null })) as { users: User[] }).users).toHaveLength(total);
  });

  test('out of range: Invalid Request: page and page_size must be positive', async () => {
    for (const body of [
      { page: 0 },
      { page: -1 },
      { page: 1, page_size: 0 },
      { page: 1, page_size: 1001 },
      { page: 1, page_size: -5 },
      { page: 0, page_size: 10 },
      { page_size: 1001 },
    ]) {
      await refused('get_users', body, 400, 'Invalid Request: page and page_size must be positive');
    }
  });

  test('a page that is not an integer is a 400 type error', async () => {
    await refused('get_users', { page: '1' }, 400, 'page must be an integer');
    await refused('get_users', { page: 1.5 }, 400, 'page must be an integer');
    await refused('get_users', { page: 1, page_size: '10' }, 400, 'page_size must be an integer');
  });
});

describe('update_user', () => {
  test('changes the given fields and answers the updated user', async () => {
    const user = await createUser({ first_name: 'A', notes: 'old' });
    const changes = {
      first_name: 'B',
      last_name: 'C',
      organization: 'O',
      phone: 'P',
      notes: 'new',
      locked: true,
      disabled: true,
    };
    const body = await ok('update_user', { target_user: { user_id: user.user_id, ...changes } });
    expect(Object.keys(body)).toEqual(['user']);
    expectKasmUser(body.user as User);
    expect(body.user).toEqual({ ...user, ...changes });
    expect((await ok('get_user', { target_user: { user_id: user.user_id } })).user).toEqual(
      listed(body.user as User),
    );
  });

  test('absent and null fields are left unchanged; only user_id answers the user as is', async () => {
    const user = await createUser({
      first_name: 'F',
      last_name: 'L',
      organization: 'O',
      phone: 'P',
      notes: 'N',
      locked: true,
      disabled: true,
      password: GOOD_PASSWORD,
    });
    const hashBefore = (await userRow(user.user_id))!.password_hash;
    const nulls = { username: null, ...NULLS };
    expect((await ok('update_user', { target_user: { user_id: user.user_id, ...nulls } })).user).toEqual(
      user,
    );
    expect((await ok('update_user', { target_user: { user_id: user.user_id } })).user).toEqual(user);
    expect((await userRow(user.user_id))!.password_hash).toBe(hashBefore);
  });

  test('empty strings clear text fields', async () => {
    const user = await createUser({ first_name: 'F', notes: 'N' });
    expect(
      (await ok('update_user', { target_user: { user_id: user.user_id, first_name: '', notes: '' } })).user,
    ).toMatchObject({ first_name: '', notes: '' });
  });

  test('username is trimmed and lowercased; renaming to oneself in another case works', async () => {
    const user = await createUser();
    const name = uniqueName('renamed');
    expect(
      (
        (
          await ok('update_user', {
            target_user: { user_id: user.user_id, username: `  ${name.toUpperCase()} ` },
          })
        ).user as User
      ).username,
    ).toBe(name);
    expect(
      (
        (await ok('update_user', { target_user: { user_id: user.user_id, username: name.toUpperCase() } }))
          .user as User
      ).username,
    ).toBe(name);
  });

  test('a username another user has (in any case): Username already in use, nothing changes', async () => {
    const [a, b] = [await createUser(), await createUser()];
    await refused(
      'update_user',
      { target_user: { user_id: b.user_id, username: ` ${a.username.toUpperCase()}`, first_name: 'X' } },
      400,
      'Username already in use',
    );
    expect((await ok('get_user', { target_user: { user_id: b.user_id } })).user).toEqual(listed(b));
  });

  test('a blank username: Invalid Request: Missing required parameters', async () => {
    const user = await createUser();
    await refused(
      'update_user',
      { target_user: { user_id: user.user_id, username: '  ' } },
      400,
      'Invalid Request: Missing required parameters',
    );
  });

  test('names, organization and phone are cut to 64 characters', async () => {
    const user = await createUser();
    const long = {
      first_name: 'a'.repeat(65),
      last_name: 'b'.repeat(200),
      organization: 'c'.repeat(64),
      phone: 'd'.repeat(99),
    };
    const updated = (await ok('update_user', { target_user: { user_id: user.user_id, ...long } })).user;
    expect(updated).toMatchObject(cutTo64(long));
  });

  test('a password is stored as a new argon2id hash and unlocks the user (even with locked: true alongside)', async () => {
    const user = await createUser({ locked: true, password: 'Initial-1' });
    const before = (await userRow(user.user_id))!.password_hash!;
    const updated = (
      await ok('update_user', { target_user: { user_id: user.user_id, password: 'Changed-2' } })
    ).user as User;
    expect(updated.locked).toBe(false);
    expectKasmUser(updated);
    const after = (await userRow(user.user_id))!.password_hash!;
    expect(after).toMatch(/^\$argon2id\$/);
    expect(after).not.toBe(before);
    expect(await verify(after, 'Changed-2')).toBe(true);

    await ok('update_user', { target_user: { user_id: user.user_id, locked: true } });
    expect(
      (
        (
          await ok('update_user', {
            target_user: { user_id: user.user_id, locked: true, password: 'Changed-3' },
          })
        ).user as User
      ).locked,
    ).toBe(false);
  });

  test('locked and disabled can be set and cleared without a password', async () => {
    const user = await createUser();
    expect(
      (await ok('update_user', { target_user: { user_id: user.user_id, locked: true, disabled: true } }))
        .user,
    ).toMatchObject({ locked: true, disabled: true });
    expect(
      (await ok('update_user', { target_user: { user_id: user.user_id, locked: false, disabled: false } }))
        .user,
    ).toMatchObject({ locked: false, disabled: false });
  });

  test.each([...RULES, ...FIRST_RULE_WINS])(
    'password %j → %s (nothing changes)',
    async (password, message) => {
      const user = await createUser({ locked: true, password: 'Initial-1' });
      const before = (await userRow(user.user_id))!;
      await refused(
        'update_user',
        { target_user: { user_id: user.user_id, password, first_name: 'Changed' } },
        400,
        message,
      );
      expect(await userRow(user.user_id)).toEqual(before);
    },
  );

  test('passwords following every rule are accepted (the contract’s special characters, a space)', async () => {
    const user = await createUser();
    for (const password of VALID_PASSWORDS) {
      await ok('update_user', { target_user: { user_id: user.user_id, password } });
      expect(await verify((await userRow(user.user_id))!.password_hash!, password)).toBe(true);
    }
  });

  test('no target or no user_id: Invalid Request', async () => {
    for (const body of [
      {},
      { target_user: null },
      { target_user: {} },
      { target_user: { user_id: null, first_name: 'x' } },
      { target_user: { user_id: '' } },
    ]) {
      await refused('update_user', body, 400, 'Invalid Request');
    }
  });

  test('unknown and malformed ids: Unknown User (before the password is looked at)', async () => {
    for (const id of [UNKNOWN, ...MALFORMED])
      await refused('update_user', { target_user: { user_id: id, first_name: 'x' } }, 400, 'Unknown User');
    await refused('update_user', { target_user: { user_id: UNKNOWN, password: 'abc' } }, 400, 'Unknown User');
  });

  test('a dashed id is accepted', async () => {
    const user = await createUser();
    expect(
      (await ok('update_user', { target_user: { user_id: dashed(user.user_id), first_name: 'Dashed' } }))
        .user,
    ).toMatchObject({ user_id: user.user_id, first_name: 'Dashed' });
  });

  test('wrong types are a 400 naming the field', async () => {
    const user = await createUser();
    const { user_id } = user;
    await refusedEach('update_user', [
      [{ target_user: { user_id, locked: 'yes' } }, 'target_user.locked must be a boolean'],
      [{ target_user: { user_id, disabled: 'false' } }, 'target_user.disabled must be a boolean'],
      [{ target_user: { user_id, username: 42 } }, 'target_user.username must be a string'],
      [{ target_user: { user_id, password: 12345678 } }, 'target_user.password must be a string'],
      [{ target_user: { user_id: 7 } }, 'target_user.user_id must be a string'],
    ]);
    expect((await ok('get_user', { target_user: { user_id: user.user_id } })).user).toEqual(listed(user));
  });
});

describe('update_user_password', () => {
  test('sets the password (argon2id), unlocks the user and answers {user} without it', async () => {
    const user = await createUser({ locked: true, password: 'Initial-1' });
    const r = await t().call('update_user_password', {
      target_user: { user_id: user.user_id, password: 'Changed-2' },
    });
    expect(r.statusCode).toBe(200);
    expect(r.body).not.toMatch(/password|argon2|Changed-2/i);
    expect(r.json()).toEqual({ user: { ...user, locked: false } });
    const row = (await userRow(user.user_id))!;
    expect(row.password_hash).toMatch(/^\$argon2id\$/);
    expect(await verify(row.password_hash!, 'Changed-2')).toBe(true);
  });

  test('other fields are ignored', async () => {
    const user = await createUser();
    const updated = (
      await ok('update_user_password', {
        target_user: {
          user_id: user.user_id,
          password: GOOD_PASSWORD,
          username: 'ignored',
          first_name: 'Ignored',
          locked: true,
        },
      })
    ).user;
    expect(updated).toEqual(user);
  });

  test.each([...RULES, ...FIRST_RULE_WINS])('password %j → %s', async (password, message) => {
    const user = await createUser({ password: 'Initial-1' });
    await refused('update_user_password', { target_user: { user_id: user.user_id, password } }, 400, message);
    expect(await verify((await userRow(user.user_id))!.password_hash!, 'Initial-1')).toBe(true);
  });

  test('no password: Invalid Request: Missing required parameters', async () => {
    const user = await createUser();
    for (const target_user of [{ user_id: user.user_id }, { user_id: user.user_id, password: null }])
      await refused(
        'update_user_password',
        { target_user },
        400,
        'Invalid Request: Missing required parameters',
      );
  });

  test('no target or user_id: Invalid Request; unknown or malformed ids: Unknown User; wrong type: 400', () =>
    refusesBadTargets('update_user_password', { password: GOOD_PASSWORD }, [
      { password: 123456789 },
      'target_user.password must be a string',
    ]));
});

describe('update_user_name', () => {
  test('changes first and last name (cut to 64), nothing else', async () => {
    const user = await createUser({
      first_name: 'Old',
      last_name: 'Name',
      locked: true,
      password: GOOD_PASSWORD,
    });
    const hashBefore = (await userRow(user.user_id))!.password_hash;
    const body = await ok('update_user_name', {
      target_user: {
        user_id: dashed(user.user_id),
        first_name: 'n'.repeat(70),
        last_name: 'New',
        username: 'ignored',
        locked: false,
        password: 'Other-123',
      },
    });
    expect(body).toEqual({ user: { ...user, first_name: 'n'.repeat(64), last_name: 'New' } });
    expect((await userRow(user.user_id))!.password_hash).toBe(hashBefore);
  });

  test('absent or null names are left unchanged', async () => {
    const user = await createUser({ first_name: 'First', last_name: 'Last' });
    expect(
      (await ok('update_user_name', { target_user: { user_id: user.user_id, first_name: 'Only' } })).user,
    ).toMatchObject({ first_name: 'Only', last_name: 'Last' });
    expect(
      (
        await ok('update_user_name', {
          target_user: { user_id: user.user_id, first_name: null, last_name: 'Later' },
        })
      ).user,
    ).toMatchObject({ first_name: 'Only', last_name: 'Later' });
  });

  test('no target: Invalid Request; unknown or malformed ids: Unknown User; wrong type: 400', () =>
    refusesBadTargets('update_user_name', { first_name: 'A' }, [
      { last_name: 5 },
      'target_user.last_name must be a string',
    ]));
});

describe('delete_user', () => {
  test('deletes the user and their memberships, answers {}; then get_user says Unknown User', async () => {
    const user = await createUser();
    const r = await t().call('delete_user', { target_user: { user_id: user.user_id }, force: false });
    expect({ status: r.statusCode, body: r.json() }).toEqual({ status: 200, body: {} });
    expect(await userRow(user.user_id)).toBeUndefined();
    expect(await memberships(user.user_id)).toEqual([]);
    await refused('get_user', { target_user: { user_id: user.user_id } }, 400, 'Unknown User');
    await refused('get_user', { target_user: { username: user.username } }, 400, 'Unknown User');
    await refused(
      'delete_user',
      { target_user: { user_id: user.user_id } },
      400,
      `Unknown user (${user.user_id})`,
    );
  });

  test('force is optional (default false); true, and null, are accepted; a dashed id too', async () => {
    for (const force of [undefined, true, null]) {
      const user = await createUser();
      expect(
        await ok('delete_user', {
          target_user: { user_id: dashed(user.user_id) },
          ...(force === undefined ? {} : { force }),
        }),
      ).toEqual({});
      expect(await userRow(user.user_id)).toBeUndefined();
    }
  });

  test("a force that is not a boolean: Invalid Request. 'force' option must be boolean (nothing deleted)", async () => {
    const user = await createUser();
    for (const force of ['false', 'true', 0, 1, {}, []]) {
      await refused(
        'delete_user',
        { target_user: { user_id: user.user_id }, force },
        400,
        "Invalid Request. 'force' option must be boolean",
      );
    }
    expect(await userRow(user.user_id)).toBeDefined();
  });

  test('no target or user_id: Invalid Request: Missing required parameters', async () => {
    for (const body of [
      {},
      { target_user: null },
      { target_user: {} },
      { target_user: { user_id: null } },
      { force: true },
    ]) {
      await refused('delete_user', body, 400, 'Invalid Request: Missing required parameters');
    }
  });

  test('unknown and malformed ids: Unknown user (<user_id as given>)', async () => {
    for (const id of [UNKNOWN, dashed(UNKNOWN), 'nope', 'g'.repeat(32), 'ABC']) {
      await refused('delete_user', { target_user: { user_id: id } }, 400, `Unknown user (${id})`);
    }
    await refused(
      'delete_user',
      { target_user: { user_id: 12 } },
      400,
      'target_user.user_id must be a string',
    );
  });
});

describe('concurrency', () => {
  test('20 parallel create_user with one username: exactly one 200, the others User already exists; one row', async () => {
    const name = uniqueName('racer');
    const variants = Array.from({ length: 20 }, (_, i) =>
      i % 3 === 0 ? name.toUpperCase() : i % 3 === 1 ? `  ${name} ` : name,
    );
    const responses = await Promise.all(
      variants.map((username) =>
        t().call('create_user', { target_user: { username, password: GOOD_PASSWORD } }),
      ),
    );
    const statuses = responses.map((r) => r.statusCode);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    for (const r of responses.filter((x) => x.statusCode !== 200)) {
      expect({ status: r.statusCode, body: r.json() }).toEqual({
        status: 400,
        body: { error_message: `Error creating user (${name}): (User already exists)` },
      });
    }
    const rows = await t()
      .database.db.selectFrom('users')
      .select('id')
      .where('username', '=', name)
      .execute();
    expect(rows).toHaveLength(1);
    const winner = responses.find((r) => r.statusCode === 200)!.json().user as User;
    expect(dbId(winner.user_id)).toBe(rows[0].id);
    expect(await memberships(winner.user_id)).toEqual([{ group_id: dbId(ALL_USERS.group_id) }]);
  });

  test('parallel update_user renaming two users to one name: one wins, the other Username already in use', async () => {
    for (let round = 0; round < 5; round++) {
      const [a, b] = [await createUser(), await createUser()];
      const name = uniqueName('contested');
      const responses = await Promise.all(
        [a, b].map((u, i) =>
          t().call('update_user', {
            target_user: { user_id: u.user_id, username: i ? name.toUpperCase() : name },
          }),
        ),
      );
      const statuses = responses.map((r) => r.statusCode).sort();
      expect(statuses).toEqual([200, 400]);
      const loser = responses.find((r) => r.statusCode === 400)!;
      expect(loser.json()).toEqual({ error_message: 'Username already in use' });
      const winner = responses.find((r) => r.statusCode === 200)!.json().user as User;
      expect(winner.username).toBe(name);
      expect(
        await t().database.db.selectFrom('users').select('id').where('username', '=', name).execute(),
      ).toEqual([{ id: dbId(winner.user_id) }]);
    }
  });
});
