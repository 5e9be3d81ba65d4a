import { createHash, randomBytes } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { errorResponses } from '@platform/http-kit';
import { buildApp } from '../src/app';
import { OPERATION_ACCESS, UNSUPPORTED_OPERATIONS, type Permission } from '../src/auth/permissions';
import { loadConfig } from '../src/config';
import { kasmDialect } from '../src/errors';
import { openForTheseTests } from '@platform/testing';
import { buildTestApp, type KeyPair } from './support/app';
import { UNKNOWN } from './support/kasm';

/** A random bootstrap secret: a literal one would be public (tools/workspace-check scans for them). */
const BOOTSTRAP_SECRET = randomBytes(24).toString('base64url');

/** What an operation answers a key allowed to run it: a status, and the error message if any. */
type Outcome = [number, string?];

const READS = false;
const WRITES = true;
const UNKNOWN_USER: Outcome = [400, 'Unknown User'];
const INVALID_USER: Outcome = [400, `Invalid User ID (${UNKNOWN})`];
const INVALID_GROUP: Outcome = [400, `Invalid Group ID (${UNKNOWN})`];
const MISSING: Outcome = [400, 'Invalid Request: Missing required parameters'];
const NO_GROUP_OR_IMAGE: Outcome = [400, 'Group or image does not exist'];
/** This matrix runs without a container engine: the session operations say so once a key may run them. */
const NO_ENGINE: Outcome = [400, 'Sessions are not available: no container engine is configured'];
const A_SESSION = { kasm_id: UNKNOWN };

/** Bodies naming entities that do not exist (or, for create_group, a priority out of range). */
const aUser = (fields: Record<string, unknown> = {}) => ({ target_user: { user_id: UNKNOWN, ...fields } });
const A_GROUP = { target_group: { group_id: UNKNOWN } };
const AN_IMAGE = { target_image: { image_id: UNKNOWN } };
const A_BAD_GROUP = { target_group: { name: 'matrix', priority: 0 } };
const A_MOVE = { ...aUser(), old_group: { group_id: UNKNOWN }, new_group: { group_id: UNKNOWN } };

/** One row of the matrix. */
const operation = (
  op: string,
  permission: Permission | 'any',
  writes: boolean,
  body: Record<string, unknown>,
  allowed: Outcome,
) => ({ op, permission, writes, body, allowed });

/**
 * Each operation with its permission, whether it writes, and a request whose outcome with a
 * sufficient key is known (mostly an unknown-entity error, so the matrix changes nothing).
 */
const OPERATIONS = [
  operation('validate_credentials', 'any', READS, {}, [200]),
  operation('get_users', 'Users View', READS, {}, [200]),
  operation('get_user', 'Users View', READS, aUser(), UNKNOWN_USER),
  operation('create_user', 'Users Create', WRITES, { target_user: {} }, MISSING),
  operation('update_user', 'Users Modify', WRITES, aUser(), UNKNOWN_USER),
  operation('delete_user', 'Users Delete', WRITES, aUser(), [400, `Unknown user (${UNKNOWN})`]),
  operation('update_user_password', 'Users Modify', WRITES, aUser({ password: 'Secret-123' }), UNKNOWN_USER),
  operation('update_user_name', 'Users Modify', WRITES, aUser({ first_name: 'A' }), UNKNOWN_USER),
  operation('get_groups', 'Groups View', READS, {}, [200]),
  operation('create_group', 'Groups Create', WRITES, A_BAD_GROUP, [400, 'Invalid priority value (0)']),
  operation('update_group', 'Groups Modify', WRITES, A_GROUP, INVALID_GROUP),
  operation('delete_group', 'Groups Delete', WRITES, A_GROUP, INVALID_GROUP),
  operation('add_user_group', 'Groups Modify', WRITES, { ...aUser(), ...A_GROUP }, INVALID_USER),
  operation('remove_user_group', 'Groups Modify', WRITES, { ...aUser(), ...A_GROUP }, INVALID_USER),
  operation('change_user_group', 'Groups Modify', WRITES, A_MOVE, INVALID_USER),
  operation('get_users_group', 'Groups View', READS, A_GROUP, INVALID_GROUP),
  operation('install_workspace', 'Images Create', WRITES, {}, MISSING),
  operation('get_images', 'Images View', READS, {}, [200]),
  operation('delete_image', 'Images Delete', WRITES, AN_IMAGE, [400, `Invalid Image ID (${UNKNOWN})`]),
  operation('add_images_group', 'Groups Modify', WRITES, { ...A_GROUP, ...AN_IMAGE }, NO_GROUP_OR_IMAGE),
  operation('remove_images_group', 'Groups Modify', WRITES, { ...A_GROUP, ...AN_IMAGE }, NO_GROUP_OR_IMAGE),
  operation('get_images_group', 'Groups View', READS, A_GROUP, INVALID_GROUP),
  operation('get_user_images', 'Users View', READS, aUser(), UNKNOWN_USER),
  operation('request_kasm', 'User', WRITES, {}, NO_ENGINE),
  operation('get_kasm_status', 'User', READS, A_SESSION, NO_ENGINE),
  operation('get_kasms', 'Sessions View', READS, {}, NO_ENGINE),
  operation('keepalive', 'User', READS, A_SESSION, NO_ENGINE),
  operation('destroy_kasm', 'User', WRITES, A_SESSION, NO_ENGINE),
  operation('exec_command_kasm', 'User', WRITES, A_SESSION, NO_ENGINE),
  ...UNSUPPORTED_OPERATIONS.map((op) =>
    operation(op, 'any', READS, {}, [400, `Unsupported request: ${op} is not available on this server`]),
  ),
];

describe('authorization matrix: every operation × every credential situation', () => {
  const t = openForTheseTests(() => buildTestApp(), 60_000);
  const keys: Record<string, KeyPair> = {};
  beforeAll(async () => {
    keys.disabled = await t().createKey(['Global Admin'], { name: 'disabled' });
    await t()
      .database.db.updateTable('api_keys')
      .set({ enabled: false })
      .where('api_key', '=', keys.disabled.api_key)
      .execute();
    keys.expired = await t().createKey(['Global Admin'], {
      name: 'expired',
      expires: new Date(Date.now() - 60_000),
    });
    keys.readOnlyAdmin = await t().createKey(['Global Admin'], { name: 'read-only', readOnly: true });
    keys.unrelated = await t().createKey(['Images Delete'], { name: 'unrelated' });
  });

  const expectError = async (
    response: Promise<import('fastify').LightMyRequestResponse>,
    status: number,
    message: string,
  ) => {
    const r = await response;
    expect({ status: r.statusCode, body: r.json() }).toEqual({ status, body: { error_message: message } });
  };

  describe.each(OPERATIONS)('$op ($permission)', ({ op, permission, writes, body, allowed }) => {
    test('no credentials → 400 Invalid Request; key without secret too', async () => {
      await expectError(t().call(op, body, null), 400, 'Invalid Request');
      await expectError(t().call(op, { ...body, api_key: t().admin.api_key }, null), 400, 'Invalid Request');
    });
    test('wrong secret, unknown key, disabled key → 403 Access Denied', async () => {
      await expectError(
        t().call(op, body, { ...t().admin, api_key_secret: 'x'.repeat(32) }),
        403,
        'Access Denied',
      );
      await expectError(
        t().call(op, body, { api_key: 'NoSuchKey123', api_key_secret: t().admin.api_key_secret }),
        403,
        'Access Denied',
      );
      await expectError(t().call(op, body, keys.disabled), 403, 'Access Denied');
    });
    test('expired key → 401 Access has expired', async () => {
      await expectError(t().call(op, body, keys.expired), 401, 'Access has expired');
    });
    test(`read-only key → ${writes ? '401 Unauthorized (the operation writes)' : 'allowed (the operation reads)'}`, async () => {
      const r = t().call(op, body, keys.readOnlyAdmin);
      if (writes) await expectError(r, 401, 'Unauthorized');
      else expect((await r).statusCode).toBe(allowed[0]);
    });
    test(`key without ${permission} → ${permission === 'any' ? 'allowed' : '401 Unauthorized'}`, async () => {
      const r = t().call(op, body, keys.unrelated);
      if (permission === 'any' || permission === 'Images Delete')
        expect((await r).statusCode).toBe(allowed[0]);
      else await expectError(r, 401, 'Unauthorized');
    });
    test(`key with exactly ${permission}, and Global Admin → the operation runs`, async () => {
      const own = permission === 'any' ? keys.unrelated : await t().createKey([permission]);
      for (const key of [own, t().admin]) {
        const r = await t().call(op, body, key);
        expect(r.statusCode).toBe(allowed[0]);
        if (allowed[1]) expect(r.json()).toEqual({ error_message: allowed[1] });
      }
    });
  });
});

describe('credentials', () => {
  const t = openForTheseTests(
    () =>
      buildTestApp({
        BOOTSTRAP_API_KEY: 'BootstrapKey',
        BOOTSTRAP_API_KEY_SECRET: BOOTSTRAP_SECRET,
      }),
    60_000,
  );

  const inject = (options: import('fastify').InjectOptions) => t().app.inject(options);

  test('the headers api-key / api-key-secret work and win over the body', async () => {
    const headers = { 'api-key': t().admin.api_key, 'api-key-secret': t().admin.api_key_secret };
    expect(
      (await inject({ method: 'POST', url: '/api/public/get_users', headers, payload: {} })).statusCode,
    ).toBe(200);
    const wrongBody = { api_key: 'NoSuchKey123', api_key_secret: 'nope' };
    expect(
      (await inject({ method: 'POST', url: '/api/public/get_users', headers, payload: wrongBody }))
        .statusCode,
    ).toBe(200);
    const wrongHeader = { 'api-key': t().admin.api_key, 'api-key-secret': 'wrong' };
    expect(
      (
        await inject({
          method: 'POST',
          url: '/api/public/get_users',
          headers: wrongHeader,
          payload: t().admin,
        })
      ).json(),
    ).toEqual({ error_message: 'Access Denied' });
  });

  test('a POST with the credentials in the headers and no body at all works', async () => {
    const headers = { 'api-key': t().admin.api_key, 'api-key-secret': t().admin.api_key_secret };
    for (const op of ['validate_credentials', 'get_users', 'get_groups']) {
      const r = await inject({ method: 'POST', url: `/api/public/${op}`, headers });
      expect(r.statusCode).toBe(200);
    }
    expect((await inject({ method: 'POST', url: '/api/public/get_users' })).json()).toEqual({
      error_message: 'Invalid Request',
    });
  });

  test('GET validate_credentials with the headers; without them 400', async () => {
    const ok = await inject({
      method: 'GET',
      url: '/api/public/validate_credentials',
      headers: { 'api-key': t().admin.api_key, 'api-key-secret': t().admin.api_key_secret },
    });
    expect({ status: ok.statusCode, body: ok.json() }).toEqual({ status: 200, body: {} });
    // The stale client sends only "Authorization: Bearer <key>": no secret.
    const stale = await inject({
      method: 'GET',
      url: '/api/public/validate_credentials',
      headers: { authorization: `Bearer ${t().admin.api_key}` },
    });
    expect({ status: stale.statusCode, body: stale.json() }).toEqual({
      status: 400,
      body: { error_message: 'Invalid Request' },
    });
  });

  test('credentials of the wrong type are missing credentials', async () => {
    expect((await t().call('get_users', { api_key: 12345, api_key_secret: true }, null)).json()).toEqual({
      error_message: 'Invalid Request',
    });
  });

  test('unknown paths answer 404 Not Found before any credential check', async () => {
    for (const url of ['/api/public/get_everything', '/api/public/', '/nowhere']) {
      const r = await inject({ method: 'POST', url, payload: {} });
      expect({ status: r.statusCode, body: r.json() }).toEqual({
        status: 404,
        body: { error_message: 'Not Found' },
      });
    }
  });

  test('a known operation with another method is 405 in the Kasm format', async () => {
    const r = await inject({ method: 'GET', url: '/api/public/get_users' });
    expect(r.statusCode).toBe(405);
    expect(r.headers.allow).toBe('POST');
    expect(Object.keys(r.json())).toEqual(['error_message']);
  });

  test('the bootstrap key from configuration is an enabled Global Admin key', async () => {
    const key = { api_key: 'BootstrapKey', api_key_secret: BOOTSTRAP_SECRET };
    expect((await t().call('get_groups', {}, key)).statusCode).toBe(200);
    expect((await t().call('validate_credentials', {}, { ...key, api_key_secret: 'other' })).statusCode).toBe(
      403,
    );
  });

  // Changed by #21: a restart used to re-enable and re-key the bootstrap key; it now leaves it alone.
  test('a restart never re-enables, re-keys or re-privileges the bootstrap key', async () => {
    const original = { api_key: 'BootstrapKey', api_key_secret: BOOTSTRAP_SECRET };
    await t()
      .database.db.updateTable('api_keys')
      .set({ enabled: false, permissions: ['Users View'], read_only: true })
      .where('api_key', '=', 'BootstrapKey')
      .execute();
    const config = loadConfig({
      LOG_LEVEL: 'silent',
      BOOTSTRAP_API_KEY: 'BootstrapKey',
      BOOTSTRAP_API_KEY_SECRET: 'a-new-secret-0123456789',
    });
    const restarted = await buildApp(
      { ...config, database: t().config.database },
      { database: t().database },
    );
    try {
      for (const key of [original, { ...original, api_key_secret: 'a-new-secret-0123456789' }]) {
        const r = await restarted.inject({ method: 'POST', url: '/api/public/get_users', payload: key });
        expect({ status: r.statusCode, body: r.json() }).toEqual({
          status: 403,
          body: { error_message: 'Access Denied' },
        });
      }
      const row = await t()
        .database.db.selectFrom('api_keys')
        .selectAll()
        .where('api_key', '=', 'BootstrapKey')
        .executeTakeFirstOrThrow();
      expect(row).toMatchObject({ enabled: false, permissions: ['Users View'], read_only: true });
    } finally {
      await restarted.close();
    }
  });

  test('keys are 12 and secrets 32 alphanumerics; only a salted hash of the secret is stored', async () => {
    const key = await t().createKey(['Users View']);
    expect(key.api_key).toMatch(/^[A-Za-z0-9]{12}$/);
    expect(key.api_key_secret).toMatch(/^[A-Za-z0-9]{32}$/);
    const row = await t()
      .database.db.selectFrom('api_keys')
      .selectAll()
      .where('api_key', '=', key.api_key)
      .executeTakeFirstOrThrow();
    expect(JSON.stringify(row)).not.toContain(key.api_key_secret);
    expect(row.secret_hash).toBe(
      createHash('sha256').update(row.secret_salt).update(key.api_key_secret).digest('hex'),
    );
    expect(row.secret_hash).not.toBe(createHash('sha256').update(key.api_key_secret).digest('hex'));
  });

  test('a key expiring in the future works', async () => {
    const key = await t().createKey(['Users View'], { expires: new Date(Date.now() + 3_600_000) });
    expect((await t().call('get_users', {}, key)).statusCode).toBe(200);
  });
});

describe('the auth hook fails closed', () => {
  const t = openForTheseTests(() => buildTestApp(), 60_000);

  test('a route under /api/public without an access rule answers 401 Unauthorized, even to an admin', async () => {
    // Built on the test app's schema and given the forgetful route before it is ready.
    const app = await buildApp({ ...t().config }, { database: t().database });
    try {
      let ran = false;
      await app.register(
        async (scope) => {
          // Documented as every operation is (its 401 too): only its access rule is forgotten.
          const response = {
            200: Type.Object({ secret: Type.String() }),
            ...errorResponses(kasmDialect, [401]),
          };
          scope.post('/forgot_its_rule', { schema: { response } }, async () => {
            ran = true;
            return { secret: 'everything' };
          });
        },
        { prefix: '/api/public' },
      );
      for (const payload of [{}, t().admin]) {
        const r = await app.inject({ method: 'POST', url: '/api/public/forgot_its_rule', payload });
        expect({ status: r.statusCode, body: r.json() }).toEqual({
          status: 401,
          body: { error_message: 'Unauthorized' },
        });
      }
      expect(ran).toBe(false);
    } finally {
      await app.close();
    }
  });

  test('every registered /api/public route has exactly the permission of the table, and no operation is missing', () => {
    const registered = Object.fromEntries(
      [...t().app.guardedRoutes].filter(([route]) => !route.startsWith('HEAD ')), // Fastify's HEAD of a GET
    );
    const expected = Object.fromEntries(
      Object.entries(OPERATION_ACCESS).map(([name, access]) => [`POST /api/public/${name}`, access]),
    );
    expected['GET /api/public/validate_credentials'] = OPERATION_ACCESS.validate_credentials;
    expect(registered).toEqual(expected);
    expect(Object.keys(registered)).toHaveLength(24 + 6 + UNSUPPORTED_OPERATIONS.length);
  });

  test('the table grants each operation the permission the contract documents', () => {
    // The contract's Operations table, row by row (../shared/contracts/workspace-api.md).
    const documented = Object.fromEntries(OPERATIONS.map((o) => [o.op, [o.permission, o.writes]]));
    expect(
      Object.fromEntries(Object.entries(OPERATION_ACCESS).map(([op, a]) => [op, [a.permission, a.writes]])),
    ).toEqual(documented);
    // The session operations' other ways in (the sessions tests run each): acting for a user, and
    // the Sessions permissions over other users' sessions.
    const more = Object.fromEntries(
      Object.entries(OPERATION_ACCESS)
        .filter(([, a]) => a.actsForUser || a.orPermission)
        .map(([op, a]) => [op, [a.actsForUser ?? false, a.orPermission ?? null]]),
    );
    expect(more).toEqual({
      request_kasm: [true, null],
      get_kasm_status: [true, null],
      keepalive: [true, 'Sessions Modify'],
      destroy_kasm: [true, 'Sessions Delete'],
      exec_command_kasm: [true, 'Sessions Modify'],
    });
  });
});
