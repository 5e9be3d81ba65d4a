import { startTestServer, type TestServer } from '@platform/workspace-api/test-support';
import {
  committedDocument,
  documentProvenByClient,
  operationsOf,
  recorder,
  type Recorder,
} from '@platform/client-kit/testing';
import {
  createWorkspaceClient,
  type KasmError,
  type OperationBody,
  type OperationName,
  type OperationResult,
  type WorkspaceClient,
} from '../src/index.js';

/**
 * The client against the real service on a real port: every operation of the committed document is
 * called through it with the key pair in the body (the last tests check), and errors come back as
 * the document types them.
 */
const document = committedDocument('workspace-api');

let server: TestServer;
let calls: Recorder;
let workspace: WorkspaceClient;

beforeAll(async () => {
  // With the in-process session engine: sessions start without Docker.
  server = await startTestServer({ SESSIONS_ENGINE: 'memory' });
  calls = recorder(document);
  workspace = createWorkspaceClient({ baseUrl: server.baseUrl, ...server.admin, fetch: calls.fetch });
});
afterAll(() => server?.close());

/** The 200 answer of an operation, failing the test with the error otherwise. */
async function ok<O extends OperationName>(
  operation: O,
  body?: OperationBody<O>,
): Promise<OperationResult<O>> {
  const { data, error, response } = await workspace.call(operation, body);
  expect([operation, response.status, error]).toEqual([operation, 200, undefined]);
  return data!;
}

const entry = {
  friendly_name: 'Desktop',
  name: 'registry.example.com:5000/team/desktop:1.2',
  description: 'A desktop',
  image_src: 'desktop.png',
  architecture: ['amd64'],
  compatibility: ['1.13.x'],
  uncompressed_size_mb: 1000,
};

describe('operations for operators', () => {
  test('health, readiness, metrics', async () => {
    expect((await workspace.GET('/healthz')).response.status).toBe(200);
    expect((await workspace.GET('/readyz')).response.status).toBe(200);
    expect((await workspace.GET('/metrics', { parseAs: 'text' })).data).toMatch(/^# HELP /m);
  });
});

describe('the key pair in every body', () => {
  test('validate_credentials: in the body (POST) and in the headers (GET)', async () => {
    expect((await workspace.POST('/api/public/validate_credentials', { body: {} })).data).toEqual({});
    expect((await workspace.GET('/api/public/validate_credentials')).data).toEqual({});
  });

  test('users, groups and images: every operation, by name, typed', async () => {
    const { user } = await ok('create_user', { target_user: { username: 'Ada', password: 'x' } });
    expect(user).toMatchObject({ username: 'ada', realm: 'local' });
    const userId = user.user_id;
    expect((await ok('get_user', { target_user: { user_id: userId } })).user.username).toBe('ada');
    expect((await ok('get_users', {})).users.map((u) => u.username)).toContain('ada');
    await ok('update_user', { target_user: { user_id: userId, first_name: 'Ada' } });
    await ok('update_user_password', { target_user: { user_id: userId, password: 'Str0ng!pass' } });
    expect(
      (await ok('update_user_name', { target_user: { user_id: userId, last_name: 'L' } })).user,
    ).toMatchObject({
      first_name: 'Ada',
      last_name: 'L',
    });

    const { group } = await ok('create_group', { target_group: { name: 'class A', priority: 10 } });
    const { group: other } = await ok('create_group', { target_group: { name: 'class B', priority: 11 } });
    await ok('update_group', { target_group: { group_id: group.group_id, description: 'the first class' } });
    expect((await ok('get_groups')).groups.map((g) => g.name)).toEqual(
      expect.arrayContaining(['class A', 'class B']),
    );
    await ok('add_user_group', {
      target_user: { user_id: userId },
      target_group: { group_id: group.group_id },
    });
    expect((await ok('get_users_group', { target_group: { group_id: group.group_id } })).total).toBe(1);
    await ok('change_user_group', {
      target_user: { user_id: userId },
      old_group: { group_id: group.group_id },
      new_group: { group_id: other.group_id },
    });

    const { image } = await ok('install_workspace', { workspace: entry });
    expect((await ok('get_images')).images.map((i) => i.image_id)).toContain(image.image_id);
    const pair = { target_group: { group_id: other.group_id }, target_image: { image_id: image.image_id } };
    await ok('add_images_group', pair);
    expect(
      (await ok('get_images_group', { target_group: { group_id: other.group_id } })).images,
    ).toHaveLength(1);
    expect((await ok('get_user_images', { target_user: { user_id: userId } })).images).toHaveLength(1);
    await ok('remove_images_group', pair);
    await ok('remove_user_group', {
      target_user: { user_id: userId },
      target_group: { group_id: other.group_id },
    });
    await ok('delete_image', { target_image: { image_id: image.image_id } });
    await ok('delete_group', { target_group: { group_id: group.group_id } });
    await ok('delete_user', { target_user: { user_id: userId }, force: true });
  });

  test('sessions, as a Kasm helper does it: a user in a group allowed an image, a session started, reached, kept alive, used and destroyed', async () => {
    const { user } = await ok('create_user', { target_user: { username: 'Grace', password: 'x' } });
    const { group } = await ok('create_group', { target_group: { name: 'class S', priority: 20 } });
    const { image } = await ok('install_workspace', {
      workspace: { ...entry, name: 'registry.example.com:5000/team/session:1.0' },
    });
    await ok('add_user_group', {
      target_user: { user_id: user.user_id },
      target_group: { group_id: group.group_id },
    });
    await ok('add_images_group', {
      target_group: { group_id: group.group_id },
      target_image: { image_id: image.image_id },
    });

    const requested = await ok('request_kasm', {
      user_id: user.user_id,
      image_id: image.image_id,
      environment: { GREETING: 'hello' },
    });
    expect(requested).toMatchObject({ status: 'requested', user_id: user.user_id, username: 'grace' });
    expect(requested.kasm_url).toBe(
      `/#/connect/kasm/${requested.kasm_id}/${user.user_id}/${requested.session_token}`,
    );
    const session = { kasm_id: requested.kasm_id, user_id: user.user_id };
    let status = await ok('get_kasm_status', session);
    for (let i = 0; status.operational_status !== 'running' && i < 100; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      status = await ok('get_kasm_status', session);
    }
    expect(status.operational_status).toBe('running');
    expect(status.kasm?.user.username).toBe('grace');
    expect(status.kasm_url).toMatch(new RegExp(`^/#/connect/kasm/${requested.kasm_id}/${user.user_id}/`));

    // Reached as the connect page does it: its page, then the kasm_url's token exchanged for the
    // session's cookie (once: a spent token is a 403).
    expect((await workspace.GET('/', { parseAs: 'text' })).data).toMatch(/^<!doctype html>/i);
    const [kasm_id, user_id, token] = status.kasm_url!.split('/').slice(-3);
    const exchanged = await workspace.POST('/connect', { body: { kasm_id, user_id, token } });
    expect(exchanged.response.status).toBe(200);
    expect(exchanged.data).toMatchObject({ kasm_id, user_id, operational_status: 'running' });
    expect(exchanged.response.headers.get('set-cookie')).toMatch(
      new RegExp(`^workspace_session=[^;]+;.*Path=/session/${kasm_id}`, 'i'),
    );
    const spent = await workspace.POST('/connect', { body: { kasm_id, user_id, token } });
    expect([spent.response.status, typeof spent.error?.error_message]).toEqual([403, 'string']);

    expect((await ok('get_kasms')).kasms.map((k) => k.kasm_id)).toContain(requested.kasm_id);
    expect((await ok('get_user', { target_user: { user_id: user.user_id } })).user.kasms).toHaveLength(1);
    expect(await ok('keepalive', session)).toEqual({ usage_reached: false });
    const exec = await ok('exec_command_kasm', { ...session, exec_config: { cmd: 'echo hi', user: 'root' } });
    expect(exec.kasm.kasm_id).toBe(requested.kasm_id);
    expect(await ok('destroy_kasm', session)).toEqual({});
    expect((await ok('get_kasm_status', session)).operational_status).toBe('stopped');

    // Kasm's refusals come back typed.
    const again = await workspace.call('keepalive', session);
    expect([again.response.status, again.error]).toEqual([
      400,
      { error_message: `Keepalive Error: the session (${requested.kasm_id}) is stopped` },
    ]);
    await ok('delete_user', { target_user: { user_id: user.user_id } });
  });

  test('the session operations this service does not provide answer 400, each', async () => {
    const unsupported = operationsOf(document)
      .filter((op) => op.startsWith('POST /api/public/'))
      .map((op) => op.slice('POST /api/public/'.length) as OperationName)
      .filter((name) =>
        (document.paths[`/api/public/${name}`].post as { summary?: string }).summary?.endsWith(
          '(not supported)',
        ),
      );
    expect(unsupported).toContain('join_kasm');
    for (const name of unsupported) {
      const { response, error } = await workspace.call(name, {});
      expect([name, response.status, error]).toEqual([
        name,
        400,
        { error_message: `Unsupported request: ${name} is not available on this server` },
      ]);
    }
  });

  test('errors are Kasm error bodies, typed from the document', async () => {
    const unknown = await workspace.call('get_user', { target_user: { username: 'nobody' } });
    const error: KasmError | undefined = unknown.error;
    expect([unknown.response.status, error]).toEqual([400, { error_message: 'Unknown User' }]);
    // Compile-time only (never called):
    // @ts-expect-error -- not an operation of the document
    void (() => workspace.call('get_userz', {}));
    // @ts-expect-error -- `target_users` is no field of get_user
    void (() => workspace.call('get_user', { target_users: {} }));
  });

  test('with a wrong secret, every operation answers 403 Access Denied', async () => {
    const wrong = createWorkspaceClient({
      baseUrl: server.baseUrl,
      api_key: server.admin.api_key,
      api_key_secret: 'not the secret',
      fetch: calls.fetch,
    });
    const names = operationsOf(document)
      .filter((op) => op.startsWith('POST /api/public/'))
      .map((op) => op.slice('POST /api/public/'.length) as OperationName);
    expect(names).toHaveLength(56);
    for (const name of names) {
      const { response, error } = await wrong.call(name);
      expect([name, response.status, error]).toEqual([name, 403, { error_message: 'Access Denied' }]);
    }
    const get = await wrong.GET('/api/public/validate_credentials');
    expect([get.response.status, get.error]).toEqual([403, { error_message: 'Access Denied' }]);
  });
});

documentProvenByClient(() => calls);
