import * as testing from '@platform/testing';
import { MAX_ID } from '@platform/schema';
import { dashed } from './support/kasm';
import { workspaceEntry } from './support/registry';
import { startTestServer } from './support/server';
import { UNSUPPORTED_OPERATIONS } from '../src/auth/permissions';

type Schema = testing.JsonSchema;

/**
 * The hostile-input storm (issue #11): at least 10,000 generated requests no client should send, over
 * real HTTP across every documented operation, with a good key (in the body or the headers), none or
 * a bad one, plus malformed HTTP framing on raw sockets. Every answer is a 4xx `{"error_message"}` with
 * the security headers, and nothing is stored. Seeded: a failure names its seed, HOSTILE_SEED replays it.
 */
describe('hostile-input storm', () => {
  // With the in-process session engine, so the session operations run past their engine check.
  const server = testing.openForTheseTests(() => startTestServer({ SESSIONS_ENGINE: 'memory' }), 60_000);

  // What the operations' handlers enforce beyond their (loose) schemas, from the contract.
  /** An id naming exactly this entity (32 hex characters, or dashed). */
  const names = (hex: string): Schema => ({ type: 'string', enum: [hex, dashed(hex)] });
  /** An object whose listed fields are all required. */
  const needs = (properties: Record<string, Schema>, optional: Record<string, Schema> = {}): Schema => ({
    type: 'object',
    required: Object.keys(properties),
    properties: { ...properties, ...optional },
  });
  const nonBlank: Schema = { type: 'string', pattern: '\\S' };
  const optionalName: Schema = { type: 'string', nullable: true, pattern: '\\S', maxLength: 255 };
  const priority: Schema = { type: 'integer', nullable: true, minimum: 1, maximum: 4095 };
  /** Pages go through JavaScript numbers: any exact integer from 1 (past the end: an empty page). */
  const paging = {
    page: { type: 'integer', nullable: true, minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
    page_size: { type: 'integer', nullable: true, minimum: 1, maximum: 1000 },
  };
  /** A count stored in an `integer` (int4) column. */
  const count = (nullable: boolean): Schema => ({ type: 'integer', nullable, minimum: 0, maximum: MAX_ID });
  /** A group by id (which wins) or by its exact name. */
  const groupByIdOrName = (hex: string, name: string): Schema => ({
    type: 'object',
    if: { required: ['group_id'], properties: { group_id: { not: { type: 'null' } } } },
    then: { properties: { group_id: names(hex) } },
    else: { required: ['name'], properties: { name: { enum: [name] } } },
  });
  const registryEntry: Schema = needs(
    {
      friendly_name: { type: 'string' },
      name: nonBlank,
      description: { type: 'string' },
      image_src: { type: 'string' },
      architecture: { type: 'array', minItems: 1, items: { enum: ['amd64', 'arm64'] } },
      compatibility: {
        type: 'array',
        minItems: 1,
        items: { type: 'string', pattern: '^[0-9]+\\.[0-9]+\\.x$' },
      },
      uncompressed_size_mb: count(false),
    },
    {
      categories: { type: 'array', nullable: true, items: { type: 'string' } },
      docker_registry: { type: 'string', nullable: true },
      run_config: { type: 'object', nullable: true },
      exec_config: { type: 'object', nullable: true },
      notes: { type: 'string', nullable: true },
      cores: { type: 'number', nullable: true },
      memory: count(true),
      gpu_count: count(true),
    },
  );

  test('10,000 bad requests across every operation: 0 × 5xx, every error in the dialect, nothing stored', async () => {
    const { app, baseUrl, database, admin, call } = server();
    const ok = async (operation: string, body: Record<string, unknown>) => {
      const r = await call(operation, body);
      if (r.statusCode !== 200) throw new Error(`${operation}: ${r.statusCode} ${r.body}`);
      return r.json();
    };
    const user: string = (await ok('create_user', { target_user: { username: 'storm-user', password: 'x' } }))
      .user.user_id;
    const groupA: string = (await ok('create_group', { target_group: { name: 'storm a', priority: 10 } }))
      .group.group_id;
    const groupB: string = (await ok('create_group', { target_group: { name: 'storm b', priority: 20 } }))
      .group.group_id;
    const image: string = (await ok('install_workspace', { workspace: workspaceEntry() })).image.image_id;
    await ok('add_user_group', { target_user: { user_id: user }, target_group: { group_id: groupA } });
    await ok('add_images_group', { target_image: { image_id: image }, target_group: { group_id: groupA } });
    // A running session of the user's, for the operations that name one.
    const requested = await ok('request_kasm', { user_id: user, image_id: image });
    const session: string = requested.kasm_id;
    /** Its connect token (request_kasm's kasm_url), which only the exact triple exchanges. */
    const connectToken: string = requested.session_token;
    await app.sessions.settled();

    const theUser = needs({ user_id: names(user) });
    /** The user a session operation acts for: absent (null, blank) or the user. */
    const actingUser: Schema = {
      anyOf: [{ type: 'null' }, { type: 'string', pattern: '^\\s*$' }, names(user)],
    };
    /** Environment variables as the service takes them. */
    const environment: Schema = {
      type: 'object',
      nullable: true,
      maxProperties: 256,
      propertyNames: { pattern: '^[A-Za-z_][A-Za-z0-9_]*$' },
      additionalProperties: { type: 'string', maxLength: 32_768 },
    };
    const theSession = needs({ kasm_id: names(session) }, { user_id: actingUser });
    const op = (body: Record<string, unknown>, rules?: Schema): testing.RouteExample => ({
      auth: true,
      body,
      ...(rules ? { rules: { body: rules } } : {}),
    });
    const routes = testing.hostileRoutesFromOpenApi(app.swagger() as never, {
      'GET /healthz': {},
      'GET /readyz': {},
      'GET /metrics': {},
      'GET /api/public/validate_credentials': { auth: true },
      // The connect page, and its token exchange (no API key: the one-time token is the credential).
      'GET /': {},
      'POST /connect': {
        body: { kasm_id: session, user_id: user, token: connectToken },
        rules: {
          body: needs({
            kasm_id: names(session),
            user_id: names(user),
            token: { type: 'string', enum: [connectToken] },
          }),
        },
      },
      'POST /api/public/validate_credentials': op({}),
      'POST /api/public/get_users': op({ page: 1, page_size: 10 }, { properties: paging }),
      'POST /api/public/get_user': op(
        { target_user: { user_id: user } },
        needs({
          target_user: {
            type: 'object',
            if: { required: ['user_id'], properties: { user_id: { not: { type: 'null' } } } },
            then: { properties: { user_id: names(user) } },
            else: { required: ['username'], properties: { username: { enum: ['storm-user'] } } },
          },
        }),
      ),
      'POST /api/public/create_user': op(
        { target_user: { username: 'storm-new', password: 'Secret-123', first_name: 'Ada', locked: false } },
        needs({ target_user: needs({ username: nonBlank }) }),
      ),
      'POST /api/public/update_user': op(
        { target_user: { user_id: user, first_name: 'Bo', organization: 'Org' } },
        needs({ target_user: needs({ user_id: names(user) }, { username: optionalName }) }),
      ),
      'POST /api/public/delete_user': op(
        { target_user: { user_id: user }, force: false },
        needs({ target_user: theUser }, { force: { type: 'boolean', nullable: true } }),
      ),
      'POST /api/public/update_user_password': op(
        { target_user: { user_id: user, password: 'Secret-123!' } },
        needs({ target_user: needs({ user_id: names(user), password: { type: 'string' } }) }),
      ),
      'POST /api/public/update_user_name': op(
        { target_user: { user_id: user, first_name: 'Cy', last_name: 'Di' } },
        needs({ target_user: theUser }),
      ),
      'POST /api/public/get_groups': op({}),
      'POST /api/public/create_group': op(
        { target_group: { name: 'storm new', priority: 30, description: 'd' } },
        needs({
          target_group: needs(
            { name: { ...nonBlank, maxLength: 255 }, priority: { ...priority, nullable: false } },
            { description: { type: 'string', nullable: true } },
          ),
        }),
      ),
      'POST /api/public/update_group': op(
        { target_group: { group_id: groupA, name: 'storm a', priority: 11, description: 'e' } },
        needs({ target_group: needs({ group_id: names(groupA) }, { name: optionalName, priority }) }),
      ),
      'POST /api/public/delete_group': op(
        { target_group: { group_id: groupB } },
        needs({ target_group: needs({ group_id: names(groupB) }) }),
      ),
      'POST /api/public/add_user_group': op(
        { target_user: { user_id: user }, target_group: { group_id: groupB } },
        needs({ target_user: theUser, target_group: needs({ group_id: names(groupB) }) }),
      ),
      'POST /api/public/remove_user_group': op(
        { target_user: { user_id: user }, target_group: { group_id: groupA } },
        needs({ target_user: theUser, target_group: needs({ group_id: names(groupA) }) }),
      ),
      'POST /api/public/change_user_group': op(
        { target_user: { user_id: user }, old_group: { group_id: groupA }, new_group: { name: 'storm b' } },
        needs({
          target_user: theUser,
          old_group: groupByIdOrName(groupA, 'storm a'),
          new_group: groupByIdOrName(groupB, 'storm b'),
        }),
      ),
      'POST /api/public/get_users_group': op(
        { target_group: { group_id: groupA }, page: 1, page_size: 5 },
        needs({ target_group: needs({ group_id: names(groupA) }) }, paging),
      ),
      'POST /api/public/install_workspace': op(
        {
          workspace: workspaceEntry({ run_config: { hostname: 'kasm' }, exec_config: { go: { cmd: 'x' } } }),
        },
        needs({ workspace: registryEntry }),
      ),
      'POST /api/public/get_images': op({}),
      'POST /api/public/delete_image': op(
        { target_image: { image_id: image } },
        needs({ target_image: needs({ image_id: names(image) }) }),
      ),
      'POST /api/public/add_images_group': op(
        { target_image: { image_id: image }, target_group: { group_id: groupB } },
        needs({
          target_image: needs({ image_id: names(image) }),
          target_group: needs({ group_id: names(groupB) }),
        }),
      ),
      'POST /api/public/remove_images_group': op(
        { target_image: { image_id: image }, target_group: { group_id: groupA } },
        needs({
          target_image: needs({ image_id: names(image) }),
          target_group: needs({ group_id: names(groupA) }),
        }),
      ),
      'POST /api/public/get_images_group': op(
        { target_group: { group_id: groupA } },
        needs({ target_group: needs({ group_id: names(groupA) }) }),
      ),
      'POST /api/public/get_user_images': op(
        { target_user: { user_id: user } },
        needs({ target_user: theUser }),
      ),
      'POST /api/public/request_kasm': op(
        { user_id: user, image_id: image, environment: { A: 'b' }, enable_sharing: false },
        needs(
          { user_id: names(user), image_id: names(image) },
          { environment, enable_sharing: { enum: [false, null] } },
        ),
      ),
      'POST /api/public/get_kasm_status': op(
        { kasm_id: session, user_id: user, skip_agent_check: true },
        needs({ kasm_id: names(session), user_id: names(user) }),
      ),
      'POST /api/public/get_kasms': op({}),
      'POST /api/public/keepalive': op({ kasm_id: session, user_id: user }, theSession),
      'POST /api/public/destroy_kasm': op({ kasm_id: session, user_id: user }, theSession),
      'POST /api/public/exec_command_kasm': op(
        {
          kasm_id: session,
          user_id: user,
          exec_config: { cmd: 'true', user: 'root', environment: { A: 'b' } },
        },
        needs(
          {
            kasm_id: names(session),
            exec_config: needs({ cmd: nonBlank }, { environment, privileged: { enum: [false, null] } }),
          },
          { user_id: actingUser },
        ),
      ),
      ...Object.fromEntries(
        UNSUPPORTED_OPERATIONS.map((name) => [`POST /api/public/${name}`, op({ kasm_id: session })]),
      ),
    });

    /** A good key in the body or the headers; a bad one (wrong secret, unknown key, empty); or none. */
    const authenticate: testing.Authenticate = (draft, kind, choices) => {
      if (kind === 'none') return;
      const pair =
        kind === 'valid'
          ? admin
          : choices.pick([
              { ...admin, api_key_secret: 'x'.repeat(32) },
              { api_key: 'nosuchkey123', api_key_secret: admin.api_key_secret },
              { api_key: admin.api_key, api_key_secret: '' },
            ]);
      const body = draft.body as Record<string, unknown> | undefined;
      if (body && typeof body === 'object' && !Array.isArray(body) && choices.chance(0.6))
        Object.assign(body, pair);
      else {
        draft.headers['api-key'] = pair.api_key;
        draft.headers['api-key-secret'] = pair.api_key_secret;
      }
    };

    const before = await testing.tableRowCounts(database);
    const report = await testing.runServiceStorm('workspace', server(), {
      routes,
      count: 10_000,
      seed: 2222,
      requestRules: { trim: true, rejectNul: true, jsonOnly: true, emptyBody: 'as-empty-object' },
      authenticate,
    });
    testing.assertStormClean(report);
    expect(report.sent).toBe(10_000);
    // Issue #21: integers beyond 2^31, 2^53 and 2^63 (and their negatives, huge decimal and exponent
    // forms) reached every integer parameter, and every answer above was a 4xx.
    const fieldsOf = (name: string, ...fields: string[]) =>
      fields.map((field) => `POST /api/public/${name} body.${field}`);
    expect([...report.integers.targets].sort()).toEqual(
      [
        ...fieldsOf('get_users', 'page', 'page_size'),
        ...fieldsOf('get_users_group', 'page', 'page_size'),
        ...fieldsOf('create_group', 'target_group.priority'),
        ...fieldsOf('update_group', 'target_group.priority'),
        ...fieldsOf(
          'install_workspace',
          'workspace.uncompressed_size_mb',
          'workspace.memory',
          'workspace.gpu_count',
        ),
      ].sort(),
    );
    expect(report.integers.sent).toBeGreaterThanOrEqual(report.integers.targets.length * 17);
    expect(await testing.tableRowCounts(database)).toEqual(before);
    // The session was neither destroyed nor started again.
    const running = await database.db.selectFrom('sessions').select(['id', 'state']).execute();
    expect(running.map((s) => s.state)).toEqual(['running']);

    // Still serving: a read and a write over HTTP.
    const users = await testing.postJson(`${baseUrl}/api/public/get_users`, admin);
    expect(users.status).toBe(200);
    const { users: listed } = (await users.json()) as { users: { username: string }[] };
    expect(listed.map((u) => u.username)).toEqual(['storm-user']);
    const created = await testing.postJson(`${baseUrl}/api/public/create_group`, {
      ...admin,
      target_group: { name: 'after the storm', priority: 50 },
    });
    expect(created.status).toBe(200);
  }, 120_000);
});
