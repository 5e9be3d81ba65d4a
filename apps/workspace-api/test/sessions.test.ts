import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { openForTheseTests } from '@platform/testing';
import { hashConnectToken } from '../src/sessions/tokens';
import type { MemoryEngine } from '../src/sessions/engine/memory';
import { createSessionsRepository } from '../src/sessions/repository';
import { parseId, toKasmId } from '../src/wire/kasm';
import type { Permission } from '../src/auth/permissions';
import { buildTestApp, type KeyPair, type TestApp } from './support/app';
import { dashed, HEX32, KASM_DATE, UNKNOWN } from './support/kasm';
import { workspaceEntry } from './support/registry';

const MISSING = 'Invalid Request: Missing required parameters';
const NO_ENGINE = 'Sessions are not available: no container engine is configured';
const KASM_KEYS = [
  'container_id',
  'expiration_date',
  'image',
  'image_id',
  'kasm_id',
  'keepalive_date',
  'operational_status',
  'port',
  'server',
  'start_date',
  'user',
  'user_id',
];
const KASM_URL = /^\/#\/connect\/kasm\/([0-9a-f]{32})\/([0-9a-f]{32})\/([A-Za-z0-9_-]{43})$/;

/** Kasm's datetime as a time (UTC). */
const timeOf = (kasmDate: string) => Date.parse(`${kasmDate.replace(' ', 'T')}Z`);

const expectError = (r: LightMyRequestResponse, status: number, message: string) =>
  expect({ status: r.statusCode, body: r.json() }).toEqual({ status, body: { error_message: message } });

/** Until `check` holds (polled), at most `ms`. */
async function eventually(check: () => Promise<boolean>, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('eventually: the condition never held');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** What the session tests of one app share: its engine, and users, groups and images made through the API. */
function sessionsKit(t: () => TestApp) {
  const engine = () => t().app.sessions.engine as MemoryEngine;
  let seq = 0;
  const ok = async (op: string, body: Record<string, unknown> = {}, key?: KeyPair) => {
    const r = await t().call(op, body, key);
    if (r.statusCode !== 200) throw new Error(`${op}: ${r.statusCode} ${r.body}`);
    return r.json();
  };
  const createUser = async (): Promise<{ user_id: string; username: string }> =>
    (await ok('create_user', { target_user: { username: `session-user-${++seq}-${Date.now()}` } })).user;
  const createGroup = async (): Promise<string> =>
    (
      await ok('create_group', {
        target_group: { name: `session group ${++seq} ${Date.now()}`, priority: 50 },
      })
    ).group.group_id;
  const installImage = async (overrides: Record<string, unknown> = {}): Promise<string> =>
    (await ok('install_workspace', { workspace: workspaceEntry(overrides) })).image.image_id;
  const join = (user: string, group: string) =>
    ok('add_user_group', { target_user: { user_id: user }, target_group: { group_id: group } });
  const allow = (group: string, image: string) =>
    ok('add_images_group', { target_group: { group_id: group }, target_image: { image_id: image } });
  /** A user in a group allowed an image. */
  const ready = async (image?: string) => {
    const user = await createUser();
    const group = await createGroup();
    const imageId = image ?? (await installImage());
    await join(user.user_id, group);
    await allow(group, imageId);
    return { user, group, image: imageId };
  };
  const request = (user: string, image: string, more: Record<string, unknown> = {}, key?: KeyPair) =>
    t().call('request_kasm', { user_id: user, image_id: image, ...more }, key);
  /** A session, running. */
  const running = async (user: string, image: string, more: Record<string, unknown> = {}) => {
    const r = await request(user, image, more);
    if (r.statusCode !== 200) throw new Error(`request_kasm: ${r.statusCode} ${r.body}`);
    await t().app.sessions.settled();
    return r.json() as { kasm_id: string; user_id: string; kasm_url: string; session_token: string };
  };
  const row = (kasmId: string) =>
    t().database.db.selectFrom('sessions').selectAll().where('id', '=', parseId(kasmId)!).executeTakeFirst();
  const stateOf = async (kasmId: string) => (await row(kasmId))?.state;
  /** A key with exactly these permissions. */
  const key = (...permissions: Permission[]) => t().createKey(permissions);
  return {
    engine,
    ok,
    createUser,
    createGroup,
    installImage,
    join,
    allow,
    ready,
    request,
    running,
    row,
    stateOf,
    key,
  };
}

describe('sessions on the in-process engine', () => {
  const t = openForTheseTests(() => buildTestApp({ SESSIONS_ENGINE: 'memory' }), 60_000);
  const kit = sessionsKit(t);
  const { engine, ok, ready, request, running, row, stateOf, key } = kit;

  describe('request_kasm → get_kasm_status → destroy_kasm', () => {
    test('answers Kasm’s shape at once, starts the container in the background, and reaches running', async () => {
      const { user, image } = await ready();
      const r = await request(user.user_id, image, { environment: { GREETING: 'hello' } });
      expect(r.statusCode).toBe(200);
      const body = r.json();
      expect(Object.keys(body).sort()).toEqual([
        'kasm_id',
        'kasm_url',
        'session_token',
        'status',
        'user_id',
        'username',
      ]);
      expect(body).toMatchObject({ status: 'requested', user_id: user.user_id, username: user.username });
      expect(body.kasm_id).toMatch(HEX32);
      const [, kasmId, userId, token] = KASM_URL.exec(body.kasm_url)!;
      expect([kasmId, userId, token]).toEqual([body.kasm_id, user.user_id, body.session_token]);
      // Only the token's hash is stored.
      const stored = await row(body.kasm_id);
      expect(stored!.connect_token_hash).toBe(hashConnectToken(body.session_token));
      expect(JSON.stringify(stored)).not.toContain(body.session_token);

      await t().app.sessions.settled();
      expect(await stateOf(body.kasm_id)).toBe('running');
      const container = engine().containerOf(body.kasm_id)!;
      expect(container.spec).toMatchObject({
        sessionId: body.kasm_id,
        userId: user.user_id,
        env: { GREETING: 'hello' },
        webPort: 6901,
        capAdd: [],
      });

      const status = await ok('get_kasm_status', { kasm_id: body.kasm_id, user_id: user.user_id });
      expect(Object.keys(status).sort()).toEqual([
        'current_time',
        'kasm',
        'kasm_url',
        'operational_message',
        'operational_progress',
        'operational_status',
      ]);
      expect(status).toMatchObject({ operational_status: 'running', operational_progress: 100 });
      expect(status.current_time).toMatch(KASM_DATE);
      expect(Object.keys(status.kasm).sort()).toEqual(KASM_KEYS);
      expect(status.kasm).toMatchObject({
        kasm_id: body.kasm_id,
        user_id: user.user_id,
        image_id: image,
        operational_status: 'running',
        container_id: container.containerId,
        port: 6901,
        user: { username: user.username },
        server: { server_id: null, hostname: 'memory', port: 6901, provider: 'memory', zone_name: 'default' },
      });
      // A fresh one-time token, which replaces the request's.
      const [, , , fresh] = KASM_URL.exec(status.kasm_url)!;
      expect(fresh).not.toBe(body.session_token);
      expect((await row(body.kasm_id))!.connect_token_hash).toBe(hashConnectToken(fresh));

      expect(await ok('destroy_kasm', { kasm_id: body.kasm_id, user_id: user.user_id })).toEqual({});
      expect(await stateOf(body.kasm_id)).toBe('stopped');
      expect(engine().containerOf(body.kasm_id)).toBeUndefined();
      const after = await ok('get_kasm_status', { kasm_id: body.kasm_id, user_id: user.user_id });
      expect(after).toEqual({
        operational_status: 'stopped',
        operational_message: 'Stopped',
        operational_progress: 100,
        current_time: expect.stringMatching(KASM_DATE),
      });
      // Destroying it again changes nothing.
      expect(await ok('destroy_kasm', { kasm_id: body.kasm_id, user_id: user.user_id })).toEqual({});
      expect(await stateOf(body.kasm_id)).toBe('stopped');
    });

    test('while it starts: the engine’s message and progress, no kasm and no new token', async () => {
      const { user, image } = await ready();
      const release = engine().holdStarts();
      try {
        const { kasm_id } = (await request(user.user_id, image)).json();
        await eventually(
          async () => (await row(kasm_id))?.message === `Preparing ${(await row(kasm_id))!.image_name}`,
        );
        const before = (await row(kasm_id))!.connect_token_hash;
        const status = await ok('get_kasm_status', { kasm_id, user_id: user.user_id });
        expect(status).toEqual({
          operational_status: 'starting',
          operational_message: expect.stringMatching(/^Preparing kasmweb\/test-\d+:1\.16\.0$/),
          operational_progress: 10,
          current_time: expect.stringMatching(KASM_DATE),
        });
        expect((await row(kasm_id))!.connect_token_hash).toBe(before);
      } finally {
        release();
      }
      await t().app.sessions.settled();
    });

    test('a start the engine refuses: failed, with the engine’s reason, and no container', async () => {
      const { user, image } = await ready();
      engine().failNextStart('exec /dockerstartup/vnc_startup.sh: no such file or directory');
      const { kasm_id } = await running(user.user_id, image);
      expect(await stateOf(kasm_id)).toBe('failed');
      const status = await ok('get_kasm_status', { kasm_id, user_id: user.user_id });
      expect(status).toMatchObject({
        operational_status: 'failed',
        operational_message: 'exec /dockerstartup/vnc_startup.sh: no such file or directory',
      });
      expect(status.kasm).toBeUndefined();
      expect(engine().containerOf(kasm_id)).toBeUndefined();
      const stored = (await row(kasm_id))!;
      expect(stored).toMatchObject({
        reason: 'exec /dockerstartup/vnc_startup.sh: no such file or directory',
      });
      expect(stored.stopped).not.toBeNull();
      expect(stored.connect_token_hash).toBeNull();
    });

    test('a workspace that exits right after its start: failed, with the reason the engine read, and no container', async () => {
      const { user, image } = await ready();
      engine().exitNextStart('The container exited with code 3: WORKSPACE_TEST_FAIL is set');
      const { kasm_id } = await running(user.user_id, image);
      expect(await stateOf(kasm_id)).toBe('failed');
      expect((await ok('get_kasm_status', { kasm_id, user_id: user.user_id })).operational_message).toBe(
        'The container exited with code 3: WORKSPACE_TEST_FAIL is set',
      );
      expect(engine().containerOf(kasm_id)).toBeUndefined();
    });

    test('running means its web port answers: the engine\u2019s own server is reached', async () => {
      const { user, image } = await ready();
      const { kasm_id } = await running(user.user_id, image);
      const status = await engine().status(engine().containerOf(kasm_id)!.containerId);
      if (status.state !== 'running') throw new Error(status.state);
      const page = await fetch(`http://${status.address.host}:${status.address.port}/`);
      expect(await page.text()).toBe('memory workspace');
      await ok('destroy_kasm', { kasm_id, user_id: user.user_id });
    });

    test('destroyed while starting: the start is cancelled, nothing runs, the session stays stopped', async () => {
      const { user, image } = await ready();
      const release = engine().holdStarts();
      const { kasm_id } = (await request(user.user_id, image)).json();
      await eventually(async () => (await stateOf(kasm_id)) === 'starting');
      expect(await ok('destroy_kasm', { kasm_id, user_id: user.user_id })).toEqual({});
      release();
      await t().app.sessions.settled();
      expect(await stateOf(kasm_id)).toBe('stopped');
      expect(engine().containerOf(kasm_id)).toBeUndefined();
    });

    test('destroyed while waiting for its web port: the recorded container is removed by the destroy', async () => {
      const { user, image } = await ready();
      engine().answering = false;
      try {
        const { kasm_id } = (await request(user.user_id, image)).json();
        await eventually(async () => (await row(kasm_id))?.container_id != null);
        expect(await stateOf(kasm_id)).toBe('starting');
        expect(await ok('destroy_kasm', { kasm_id, user_id: user.user_id })).toEqual({});
        expect(engine().containerOf(kasm_id)).toBeUndefined();
        await t().app.sessions.settled();
        expect(await stateOf(kasm_id)).toBe('stopped');
      } finally {
        engine().answering = true;
      }
    });

    test('a destroy the engine cannot finish: 503 Destroy Error, still stopping; destroying again finishes', async () => {
      const { user, image } = await ready();
      const { kasm_id } = await running(user.user_id, image);
      engine().failNextRemove('connect ECONNREFUSED /var/run/docker.sock');
      expectError(
        await t().call('destroy_kasm', { kasm_id, user_id: user.user_id }),
        503,
        'Destroy Error: connect ECONNREFUSED /var/run/docker.sock',
      );
      expect(await stateOf(kasm_id)).toBe('stopping');
      expect(engine().containerOf(kasm_id)).toBeDefined();
      expect(await ok('destroy_kasm', { kasm_id, user_id: user.user_id })).toEqual({});
      expect(await stateOf(kasm_id)).toBe('stopped');
      expect(engine().containerOf(kasm_id)).toBeUndefined();
    });
  });

  describe('request_kasm: validation', () => {
    let user: { user_id: string; username: string };
    let image: string;
    beforeAll(async () => {
      ({ user, image } = await ready());
    });

    test.each([
      ['image_id a number', { image_id: 42 }, 'image_id'],
      ['user_id a number', { user_id: 7 }, 'user_id'],
      ['environment a string', { environment: 'A=1' }, 'environment'],
      ['environment a list', { environment: ['A=1'] }, 'environment'],
      ['a variable a number', { environment: { A: 1 } }, 'environment'],
      ['a variable null', { environment: { A: null } }, 'environment'],
      ['a variable of 32,769 characters', { environment: { A: 'x'.repeat(32_769) } }, 'environment'],
      [
        '257 variables',
        { environment: Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`V${i}`, 'x'])) },
        'environment',
      ],
      ['enable_sharing a string', { enable_sharing: 'true' }, 'enable_sharing'],
      ['enable_sharing a number', { enable_sharing: 1 }, 'enable_sharing'],
    ])('%s: a 400 naming the field', async (_label, fields, field) => {
      const r = await t().call('request_kasm', { user_id: user.user_id, image_id: image, ...fields });
      expect(r.statusCode).toBe(400);
      expect(Object.keys(r.json())).toEqual(['error_message']);
      expect(r.json().error_message).toContain(field);
    });

    test('environment names are shell variable names', async () => {
      for (const name of ['1A', 'A-B', 'A B', '', 'É'])
        expectError(
          await request(user.user_id, image, { environment: { [name]: 'x' } }),
          400,
          `Invalid Request: environment names variables with letters, digits and _ (not starting with a digit): ${JSON.stringify(name)}`,
        );
    });

    test('Kasm’s refusals, each with its message; nothing is stored', async () => {
      const before = await t()
        .database.db.selectFrom('sessions')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirst();
      const admin = await key('Global Admin');
      expectError(
        await t().call('request_kasm', { image_id: image }, admin),
        400,
        `DevAPI Key (test Global Admin) made invalid call to impersonate a user without providing a user_id.`,
      );
      for (const userId of [null, '', '  '])
        expectError(
          await t().call('request_kasm', { user_id: userId, image_id: image }, admin),
          400,
          `DevAPI Key (test Global Admin) made invalid call to impersonate a user without providing a user_id.`,
        );
      for (const userId of [UNKNOWN, 'not-an-id', dashed(UNKNOWN)])
        expectError(await request(userId, image), 400, `Invalid user_id (${userId})`);
      expectError(await t().call('request_kasm', { user_id: user.user_id }), 400, 'No Default Image Found');
      expectError(await request(user.user_id, null as never), 400, 'No Default Image Found');
      for (const imageId of [UNKNOWN, 'nope'])
        expectError(await request(user.user_id, imageId), 400, `Invalid Image ID (${imageId})`);
      expectError(
        await request(user.user_id, image, { enable_sharing: true }),
        400,
        'Session sharing is not supported (enable_sharing)',
      );
      const disabled = await kit.installImage();
      await t()
        .database.db.updateTable('images')
        .set({ enabled: false })
        .where('id', '=', parseId(disabled)!)
        .execute();
      expectError(await request(user.user_id, disabled), 400, `Image (${disabled}) is disabled`);
      const after = await t()
        .database.db.selectFrom('sessions')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirst();
      expect(after).toEqual(before);
    });

    test('dashed and upper-case ids are accepted; enable_sharing false and unknown fields are fine', async () => {
      const { user: other, image: theirs } = await ready();
      const r = await t().call('request_kasm', {
        user_id: dashed(other.user_id).toUpperCase(),
        image_id: dashed(theirs),
        enable_sharing: false,
        connection_info: { guac: {} },
        client_language: 'en',
      });
      expect(r.statusCode).toBe(200);
      expect(r.json().user_id).toBe(other.user_id);
      await t().app.sessions.settled();
    });
  });

  describe('the group ↔ image rule', () => {
    test('only an image allowed to one of the user’s groups starts, whichever group allows it', async () => {
      const user = await kit.createUser();
      const image = await kit.installImage();
      const refused = `Image (${image}) is not available to user (${user.user_id})`;
      expectError(await request(user.user_id, image), 400, refused);
      // Allowed to a group the user is not in.
      const elsewhere = await kit.createGroup();
      await kit.allow(elsewhere, image);
      expectError(await request(user.user_id, image), 400, refused);
      // A second group of the user's allows it.
      const mine = await kit.createGroup();
      await kit.join(user.user_id, mine);
      expectError(await request(user.user_id, image), 400, refused);
      await kit.allow(mine, image);
      const { kasm_id } = await running(user.user_id, image);
      expect(await stateOf(kasm_id)).toBe('running');
      // Taken off the group's list again: no new session.
      await ok('remove_images_group', {
        target_group: { group_id: mine },
        target_image: { image_id: image },
      });
      expectError(await request(user.user_id, image), 400, refused);
      await ok('destroy_kasm', { kasm_id, user_id: user.user_id });
    });

    test('a deleted image’s running session keeps running and keeps its image’s name', async () => {
      const { user, image } = await ready();
      const { kasm_id } = await running(user.user_id, image);
      const name = (await row(kasm_id))!.image_name;
      await ok('delete_image', { target_image: { image_id: image } });
      const status = await ok('get_kasm_status', { kasm_id, user_id: user.user_id });
      expect(status.kasm).toMatchObject({
        image_id: null,
        image: { image_id: null, name, friendly_name: null, image_src: null },
        operational_status: 'running',
      });
      await ok('destroy_kasm', { kasm_id, user_id: user.user_id });
    });
  });

  describe('the per-user maximum', () => {
    test('20 concurrent request_kasm for one user: exactly SESSIONS_MAX_PER_USER (2) succeed', async () => {
      const { user, image } = await ready();
      const answers = await Promise.all(Array.from({ length: 20 }, () => request(user.user_id, image)));
      const statuses = answers.map((r) => r.statusCode);
      expect(statuses.filter((s) => s === 200)).toHaveLength(2);
      for (const r of answers.filter((a) => a.statusCode !== 200))
        expectError(r, 400, `Kasm limit exceeded for user: (${user.username})`);
      await t().app.sessions.settled();
      const live = await t()
        .database.db.selectFrom('sessions')
        .select('state')
        .where('user_id', '=', parseId(user.user_id)!)
        .execute();
      expect(live.map((s) => s.state)).toEqual(['running', 'running']);

      // Another user is not held back by it.
      const { user: other } = await ready(image);
      expect((await request(other.user_id, image)).statusCode).toBe(200);
      await t().app.sessions.settled();
      // One over, one more may start; failed and stopped sessions do not count.
      const first = answers.find((r) => r.statusCode === 200)!.json().kasm_id;
      await ok('destroy_kasm', { kasm_id: first, user_id: user.user_id });
      engine().failNextStart('no');
      await running(user.user_id, image);
      expect((await request(user.user_id, image)).statusCode).toBe(200);
      expectError(
        await request(user.user_id, image),
        400,
        `Kasm limit exceeded for user: (${user.username})`,
      );
      await t().app.sessions.settled();
    });
  });

  describe('keepalive and expiry', () => {
    const KEEPALIVE = 3600;
    const near = (actual: number, expected: number) =>
      expect(Math.abs(actual - expected)).toBeLessThan(5_000);

    test('a session expires SESSIONS_KEEPALIVE_SECONDS after it starts; keepalive extends it from now', async () => {
      const { user, image } = await ready();
      const { kasm_id } = await running(user.user_id, image);
      const start = await ok('get_kasm_status', { kasm_id, user_id: user.user_id });
      near(timeOf(start.kasm.expiration_date), Date.now() + KEEPALIVE * 1000);
      expect(start.kasm.keepalive_date).toBe(start.kasm.start_date);

      // As if an hour had passed: the expiration is near; a keepalive makes it an hour from now.
      const id = parseId(kasm_id)!;
      await t()
        .database.db.updateTable('sessions')
        .set({ expiration: new Date(Date.now() + 10_000), keepalive: new Date(Date.now() - 3_600_000) })
        .where('id', '=', id)
        .execute();
      expect(await ok('keepalive', { kasm_id, user_id: user.user_id })).toEqual({ usage_reached: false });
      const kept = (await row(kasm_id))!;
      near(kept.expiration.getTime(), Date.now() + KEEPALIVE * 1000);
      near(kept.keepalive.getTime(), Date.now());

      // Never shortened: an expiration later than an hour from now stays.
      const later = new Date(Date.now() + 5 * 3_600_000);
      await t().database.db.updateTable('sessions').set({ expiration: later }).where('id', '=', id).execute();
      await ok('keepalive', { kasm_id, user_id: user.user_id });
      expect((await row(kasm_id))!.expiration.getTime()).toBe(later.getTime());
      await ok('destroy_kasm', { kasm_id, user_id: user.user_id });
    });

    test('a session that is over cannot be kept alive', async () => {
      const { user, image } = await ready();
      const { kasm_id } = await running(user.user_id, image);
      await ok('destroy_kasm', { kasm_id, user_id: user.user_id });
      expectError(
        await t().call('keepalive', { kasm_id, user_id: user.user_id }),
        400,
        `Keepalive Error: the session (${kasm_id}) is stopped`,
      );
    });

    test('a slow start does not eat into the session’s life', async () => {
      const { user, image } = await ready();
      const release = engine().holdStarts();
      const { kasm_id } = (await request(user.user_id, image)).json();
      await eventually(async () => (await stateOf(kasm_id)) === 'starting');
      // As if the start took most of an hour.
      await t()
        .database.db.updateTable('sessions')
        .set({ expiration: new Date(Date.now() + 60_000) })
        .where('id', '=', parseId(kasm_id)!)
        .execute();
      release();
      await t().app.sessions.settled();
      near((await row(kasm_id))!.expiration.getTime(), Date.now() + KEEPALIVE * 1000);
      await ok('destroy_kasm', { kasm_id, user_id: user.user_id });
    });
  });

  describe('get_kasms', () => {
    test('every live session with its user’s name and server, and the current time', async () => {
      const { user, image } = await ready();
      const a = await running(user.user_id, image);
      const release = engine().holdStarts();
      const b = (await request(user.user_id, image)).json();
      const list = await ok('get_kasms');
      release();
      expect(Object.keys(list).sort()).toEqual(['current_time', 'kasms']);
      expect(list.current_time).toMatch(KASM_DATE);
      const mine = list.kasms.filter((k: { user_id: string }) => k.user_id === user.user_id);
      expect(mine.map((k: { kasm_id: string }) => k.kasm_id)).toEqual([a.kasm_id, b.kasm_id]);
      for (const kasm of mine) {
        expect(Object.keys(kasm).sort()).toEqual(KASM_KEYS);
        expect(kasm.user).toEqual({ username: user.username });
        expect(kasm.server).toEqual({
          server_id: null,
          hostname: 'memory',
          port: 6901,
          provider: 'memory',
          zone_name: 'default',
        });
      }
      expect(mine[0].operational_status).toBe('running');
      expect(['requested', 'starting']).toContain(mine[1].operational_status);
      await t().app.sessions.settled();
      await ok('destroy_kasm', { kasm_id: a.kasm_id, user_id: user.user_id });
      await ok('destroy_kasm', { kasm_id: b.kasm_id, user_id: user.user_id });
      const after = await ok('get_kasms');
      expect(after.kasms.filter((k: { user_id: string }) => k.user_id === user.user_id)).toEqual([]);
    });
  });

  describe('exec_command_kasm', () => {
    test('starts the command in the running container and answers the kasm', async () => {
      const { user, image } = await ready();
      const { kasm_id } = await running(user.user_id, image);
      const container = engine().containerOf(kasm_id)!;
      const body = await ok('exec_command_kasm', {
        kasm_id,
        user_id: user.user_id,
        exec_config: { cmd: 'touch /tmp/x', user: 'root', environment: { A: '1' }, workdir: '/tmp' },
      });
      expect(Object.keys(body).sort()).toEqual(['current_time', 'kasm']);
      expect(body.kasm.kasm_id).toBe(kasm_id);
      expect(engine().execs.at(-1)).toEqual({
        containerId: container.containerId,
        cmd: 'touch /tmp/x',
        user: 'root',
        env: { A: '1' },
      });
      // Its container stopped behind the service's back: the engine's refusal.
      engine().stopContainer(container.containerId, 'Exited (137)');
      expectError(
        await t().call('exec_command_kasm', { kasm_id, user_id: user.user_id, exec_config: { cmd: 'ls' } }),
        400,
        'Kasm exec failed: The container is not running',
      );
      await ok('destroy_kasm', { kasm_id, user_id: user.user_id });
      expectError(
        await t().call('exec_command_kasm', { kasm_id, user_id: user.user_id, exec_config: { cmd: 'ls' } }),
        400,
        'Kasm is not running or is not responding',
      );
    });

    test('what it refuses', async () => {
      const { user, image } = await ready();
      const { kasm_id } = await running(user.user_id, image);
      const call = (fields: Record<string, unknown>) =>
        t().call('exec_command_kasm', { kasm_id, user_id: user.user_id, ...fields });
      for (const fields of [{}, { exec_config: null }, { exec_config: {} }, { exec_config: { cmd: ' ' } }])
        expectError(await call(fields), 400, MISSING);
      expectError(
        await call({ exec_config: { cmd: 'id', privileged: true } }),
        400,
        'Privileged commands are not supported (exec_config.privileged)',
      );
      for (const [fields, field] of [
        [{ exec_config: 'ls' }, 'exec_config'],
        [{ exec_config: { cmd: ['ls'] } }, 'cmd'],
        [{ exec_config: { cmd: 'ls', environment: { A: 1 } } }, 'environment'],
        [{ exec_config: { cmd: 'ls', privileged: 'no' } }, 'privileged'],
      ] as const) {
        const r = await call(fields);
        expect(r.statusCode).toBe(400);
        expect(r.json().error_message).toContain(field);
      }
      expectError(
        await call({ exec_config: { cmd: 'ls', environment: { 'A=B': 'x' } } }),
        400,
        'Invalid Request: exec_config.environment names variables with letters, digits and _ (not starting with a digit): "A=B"',
      );
      expect(
        engine().execs.filter((e) => e.containerId === engine().containerOf(kasm_id)!.containerId),
      ).toEqual([]);
      await ok('destroy_kasm', { kasm_id, user_id: user.user_id });
    });
  });

  describe('sessions named by kasm_id', () => {
    test('missing, malformed or unknown kasm_id; another user’s session is not reachable by status', async () => {
      const { user, image } = await ready();
      const { user: other } = await ready(image);
      const { kasm_id } = await running(user.user_id, image);
      for (const op of ['get_kasm_status', 'keepalive', 'destroy_kasm', 'exec_command_kasm']) {
        const more = op === 'exec_command_kasm' ? { exec_config: { cmd: 'ls' } } : {};
        for (const body of [{}, { kasm_id: null }, { kasm_id: '' }])
          expectError(await t().call(op, { user_id: user.user_id, ...more, ...body }), 400, MISSING);
        for (const id of [UNKNOWN, 'nope'])
          expectError(
            await t().call(op, { user_id: user.user_id, kasm_id: id, ...more }),
            400,
            `Invalid kasm_id (${id})`,
          );
        const r = await t().call(op, { user_id: user.user_id, kasm_id: 42 });
        expect(r.statusCode).toBe(400);
        expect(r.json().error_message).toContain('kasm_id');
      }
      expectError(await t().call('get_kasm_status', { kasm_id }), 400, 'No User sent with request');
      expectError(
        await t().call('get_kasm_status', { kasm_id, user_id: other.user_id }),
        400,
        `Invalid kasm_id (${kasm_id})`,
      );
      // Dashed ids name it too.
      expect(
        (await ok('get_kasm_status', { kasm_id: dashed(kasm_id), user_id: user.user_id })).operational_status,
      ).toBe('running');
      await ok('destroy_kasm', { kasm_id, user_id: user.user_id });
    });
  });

  describe('permissions', () => {
    let user: { user_id: string; username: string };
    let other: { user_id: string; username: string };
    let image: string;
    beforeAll(async () => {
      ({ user, image } = await ready());
      ({ user: other } = await ready(image));
    });

    test('request_kasm acts for a user only with User + Users Auth Session (Global Admin has both)', async () => {
      const both = await key('User', 'Users Auth Session');
      const r = await request(user.user_id, image, {}, both);
      expect(r.statusCode).toBe(200);
      await t().app.sessions.settled();
      await ok('destroy_kasm', { kasm_id: r.json().kasm_id, user_id: user.user_id }, both);

      const userOnly = await t().createKey(['User'], { name: 'user only' });
      expectError(
        await request(user.user_id, image, {}, userOnly),
        401,
        'API Key (user only) is not authorized to impersonate a user.',
      );
      // Without a user it acts for no one, and request_kasm makes no anonymous users.
      expectError(
        await t().call('request_kasm', { image_id: image }, userOnly),
        400,
        'DevAPI Key (user only) made invalid call to impersonate a user without providing a user_id.',
      );
      expectError(
        await request(user.user_id, image, {}, await key('Users Auth Session')),
        401,
        'Unauthorized',
      );
      expectError(
        await request(user.user_id, image, {}, await key('Users View', 'Sessions View')),
        401,
        'Unauthorized',
      );
      const readOnly = await t().createKey(['User', 'Users Auth Session'], { readOnly: true });
      expectError(await request(user.user_id, image, {}, readOnly), 401, 'Unauthorized');
      // The impersonation is refused before the user is looked up.
      expectError(
        await request(UNKNOWN, image, {}, userOnly),
        401,
        'API Key (user only) is not authorized to impersonate a user.',
      );
    });

    test('get_kasm_status: the user’s own, acted for; get_kasms: Sessions View', async () => {
      const { kasm_id } = await running(user.user_id, image);
      const both = await key('User', 'Users Auth Session');
      const readOnly = await t().createKey(['User', 'Users Auth Session'], { readOnly: true });
      for (const k of [both, readOnly])
        expect((await ok('get_kasm_status', { kasm_id, user_id: user.user_id }, k)).operational_status).toBe(
          'running',
        );
      expectError(
        await t().call(
          'get_kasm_status',
          { kasm_id, user_id: user.user_id },
          await t().createKey(['User'], { name: 'u' }),
        ),
        401,
        'API Key (u) is not authorized to impersonate a user.',
      );
      expectError(
        await t().call('get_kasm_status', { kasm_id, user_id: user.user_id }, await key('Sessions View')),
        401,
        'Unauthorized',
      );

      for (const k of [
        await key('Sessions View'),
        await t().createKey(['Sessions View'], { readOnly: true }),
      ])
        expect((await t().call('get_kasms', {}, k)).statusCode).toBe(200);
      for (const k of [
        await key('User', 'Users Auth Session'),
        await key('Sessions Modify', 'Sessions Delete'),
      ])
        expectError(await t().call('get_kasms', {}, k), 401, 'Unauthorized');
      await ok('destroy_kasm', { kasm_id, user_id: user.user_id });
    });

    test.each([
      ['keepalive', 'Sessions Modify', {}],
      ['exec_command_kasm', 'Sessions Modify', { exec_config: { cmd: 'true' } }],
      ['destroy_kasm', 'Sessions Delete', {}],
    ] as const)(
      '%s: the owner acted for, or a key with %s for anyone’s session',
      async (op, others, more) => {
        const both = await key('User', 'Users Auth Session');
        const attempt = async (k: KeyPair, userId?: string) => {
          const { kasm_id } = await running(user.user_id, image);
          const r = await t().call(op, { kasm_id, ...(userId ? { user_id: userId } : {}), ...more }, k);
          await ok('destroy_kasm', { kasm_id });
          return r;
        };
        // The owner.
        expect((await attempt(both, user.user_id)).statusCode).toBe(200);
        // Another user acted for, the key without the Sessions permission: not theirs.
        expectError(await attempt(both, other.user_id), 401, 'Unauthorized');
        // No user: only with the Sessions permission.
        expectError(await attempt(await key('User')), 401, 'Unauthorized');
        expect((await attempt(await key(others))).statusCode).toBe(200);
        // With it, acting for another user is fine too.
        expect(
          (await attempt(await key('User', 'Users Auth Session', others), other.user_id)).statusCode,
        ).toBe(200);
        // The other Sessions permissions do not stand in for it.
        const wrong = (['Sessions View', 'Sessions Modify', 'Sessions Delete'] as const).filter(
          (p) => p !== others,
        );
        expectError(await attempt(await key(...wrong)), 401, 'Unauthorized');
        // Read-only keys may keep alive (as in Kasm), not run commands or destroy.
        const readOnly = await t().createKey([others], { readOnly: true });
        const r = await attempt(readOnly);
        if (op === 'keepalive') expect(r.statusCode).toBe(200);
        else expectError(r, 401, 'Unauthorized');
      },
    );
  });

  describe('users and their sessions', () => {
    test('get_user and get_users list the live sessions for keys with Sessions View; last_session', async () => {
      const { user, image } = await ready();
      expect((await ok('get_user', { target_user: { user_id: user.user_id } })).user).toMatchObject({
        kasms: [],
        last_session: null,
      });
      const { kasm_id } = await running(user.user_id, image);
      const stored = (await row(kasm_id))!;
      const expected = [
        {
          kasm_id,
          start_date: expect.stringMatching(KASM_DATE),
          keepalive_date: expect.stringMatching(KASM_DATE),
          expiration_date: expect.stringMatching(KASM_DATE),
          server: { server_id: null, hostname: 'memory', port: 6901 },
        },
      ];
      const got = (await ok('get_user', { target_user: { user_id: user.user_id } })).user;
      expect(got.kasms).toEqual(expected);
      expect(timeOf(got.kasms[0].expiration_date)).toBe(Math.floor(stored.expiration.getTime()));
      expect(timeOf(got.last_session)).toBe(stored.created.getTime());
      const listed = (await ok('get_users')).users.find(
        (u: { user_id: string }) => u.user_id === user.user_id,
      );
      expect(listed.kasms).toEqual(got.kasms);
      expect(listed.last_session).toBe(got.last_session);

      const viewOnly = await key('Users View');
      const seen = await key('Users View', 'Sessions View');
      expect((await ok('get_user', { target_user: { user_id: user.user_id } }, viewOnly)).user.kasms).toEqual(
        [],
      );
      expect((await ok('get_user', { target_user: { user_id: user.user_id } }, seen)).user.kasms).toEqual(
        expected,
      );
      const listedBy = async (k: KeyPair) =>
        (await ok('get_users', {}, k)).users.find((u: { user_id: string }) => u.user_id === user.user_id)
          .kasms;
      expect(await listedBy(viewOnly)).toEqual([]);
      expect(await listedBy(seen)).toEqual(expected);

      await ok('destroy_kasm', { kasm_id, user_id: user.user_id });
      expect((await ok('get_user', { target_user: { user_id: user.user_id } })).user.kasms).toEqual([]);
    });

    test('delete_user refuses a user with live sessions unless force, which removes their containers', async () => {
      const { user, image } = await ready();
      const a = await running(user.user_id, image);
      const release = engine().holdStarts();
      const b = (await request(user.user_id, image)).json();
      await eventually(async () => (await stateOf(b.kasm_id)) === 'starting');
      for (const force of [undefined, false, null])
        expectError(
          await t().call('delete_user', {
            target_user: { user_id: user.user_id },
            ...(force === undefined ? {} : { force }),
          }),
          400,
          "Users contains (2) kasms and 'force' option not set to True",
        );
      expect(await ok('delete_user', { target_user: { user_id: user.user_id }, force: true })).toEqual({});
      release();
      await t().app.sessions.settled();
      expect(engine().containerOf(a.kasm_id)).toBeUndefined();
      expect(engine().containerOf(b.kasm_id)).toBeUndefined();
      expect(await row(a.kasm_id)).toBeUndefined();
      expect(await row(b.kasm_id)).toBeUndefined();
      expectError(
        await t().call('get_user', { target_user: { user_id: user.user_id } }),
        400,
        'Unknown User',
      );
    });

    test('a user whose sessions are over is deleted without force', async () => {
      const { user, image } = await ready();
      const { kasm_id } = await running(user.user_id, image);
      await ok('destroy_kasm', { kasm_id, user_id: user.user_id });
      engine().failNextStart('no');
      await running(user.user_id, image);
      expect(await ok('delete_user', { target_user: { user_id: user.user_id } })).toEqual({});
    });
  });

  describe('the session row moves only forward', () => {
    test('each move happens only from the states it expects', async () => {
      const { user, image } = await ready();
      const release = engine().holdStarts();
      const { kasm_id } = (await request(user.user_id, image)).json();
      await eventually(async () => (await stateOf(kasm_id)) === 'starting');
      const sessions = createSessionsRepository(t().database.db);
      const id = parseId(kasm_id)!;
      // starting: no second start, no stop without a destroy first.
      expect(await sessions.markStarting(id)).toBe(false);
      expect(await sessions.markStopped(id)).toBe(false);
      // A destroy wins the race: the start finishing after it cannot make it run, nor fail.
      expect((await sessions.beginStop(id))?.state).toBe('stopping');
      expect(await sessions.markRunning(id, 'c0ffee', 3600)).toBeUndefined();
      expect(await sessions.markFailed(id, 'late')).toBe(false);
      expect(await sessions.keepalive(id, 3600)).toBeUndefined();
      expect(await sessions.markStopped(id)).toBe(true);
      // Over: nothing moves it again.
      expect(await sessions.beginStop(id)).toBeUndefined();
      expect(await sessions.markStarting(id)).toBe(false);
      expect(await sessions.markRunning(id, 'c0ffee', 3600)).toBeUndefined();
      expect(await sessions.issueConnectToken(id, { hash: 'x', ttlSeconds: 60 })).toBe(false);
      release();
      await t().app.sessions.settled();
      expect(await stateOf(kasm_id)).toBe('stopped');
      // The start that lost the race removed the container it made.
      expect(engine().containerOf(kasm_id)).toBeUndefined();
    });

    test('a start whose own bookkeeping fails (the database refusing a write) fails at once, not at the timeout', async () => {
      const { user, image } = await ready();
      const { db, schema } = t().database;
      // The write that records the started container fails, as a full disk or a lost pool would.
      await sql
        .raw(
          `
        create function "${schema}".refuse_container() returns trigger language plpgsql as $$
        begin
          if new.container_id is not null and old.container_id is null then raise exception 'disk full'; end if;
          return new;
        end $$;
        create trigger refuse_container before update on "${schema}".sessions
          for each row execute function "${schema}".refuse_container();
      `,
        )
        .execute(db);
      try {
        const { kasm_id } = (await request(user.user_id, image)).json();
        await t().app.sessions.settled();
        expect(await row(kasm_id)).toMatchObject({
          state: 'failed',
          reason: 'The service could not record the workspace\u2019s start; request it again',
        });
      } finally {
        await sql.raw(`drop trigger refuse_container on "${schema}".sessions`).execute(db);
      }
    });

    test('a start that loses the race to a destroy on another replica removes its own container', async () => {
      const { user, image } = await ready();
      const release = engine().holdStarts();
      const { kasm_id } = (await request(user.user_id, image)).json();
      await eventually(async () => (await stateOf(kasm_id)) === 'starting');
      // What another replica's destroy_kasm writes (it cannot cancel this process's start).
      const sessions = createSessionsRepository(t().database.db);
      await sessions.beginStop(parseId(kasm_id)!);
      await sessions.markStopped(parseId(kasm_id)!);
      release();
      await t().app.sessions.settled();
      expect(engine().started.some((s) => s.sessionId === kasm_id)).toBe(true);
      expect(engine().containerOf(kasm_id)).toBeUndefined();
      expect(await stateOf(kasm_id)).toBe('stopped');
    });
  });

  describe('the operations this service does not provide', () => {
    test('each answers a clear 400 to any valid key', async () => {
      const anyKey = await key('Images View');
      for (const op of [
        'join_kasm',
        'get_kasm_screenshot',
        'set_session_permissions',
        'get_session_recordings',
      ])
        expectError(
          await t().call(op, { share_id: 'x', kasm_id: UNKNOWN }, anyKey),
          400,
          `Unsupported request: ${op} is not available on this server`,
        );
    });
  });

  test('repository: the live lists get_kasms and the users read', async () => {
    const { user, image } = await ready();
    const a = await running(user.user_id, image);
    const b = await running(user.user_id, image);
    const sessions = createSessionsRepository(t().database.db);
    expect((await sessions.listLiveOfUsers([parseId(user.user_id)!])).map((s) => toKasmId(s.id))).toEqual([
      a.kasm_id,
      b.kasm_id,
    ]);
    await ok('destroy_kasm', { kasm_id: b.kasm_id, user_id: user.user_id });
    expect((await sessions.listLive()).map((s) => toKasmId(s.id))).not.toContain(b.kasm_id);
    expect((await sessions.listLiveOfUsers([parseId(user.user_id)!])).map((s) => toKasmId(s.id))).toEqual([
      a.kasm_id,
    ]);
    await ok('destroy_kasm', { kasm_id: a.kasm_id, user_id: user.user_id });
  });
});

describe('sessions with other settings', () => {
  const t = openForTheseTests(
    () =>
      buildTestApp({
        SESSIONS_ENGINE: 'memory',
        SESSIONS_MAX_PER_USER: '3',
        SESSIONS_KEEPALIVE_SECONDS: '600',
        SESSIONS_START_TIMEOUT_MS: '1000',
        SESSIONS_WEB_PORT: '8443',
        SESSIONS_ALLOWED_CAPABILITIES: 'sys_admin, CAP_NET_ADMIN',
      }),
    60_000,
  );
  const kit = sessionsKit(t);

  test('the configured maximum, keepalive, web port (an image may name its own) and capabilities', async () => {
    const image = await kit.installImage({
      run_config: {
        hostname: 'kasm',
        environment: { FROM_IMAGE: 'image', SHARED: 'image' },
        shm_size: '512m',
        cap_add: ['SYS_ADMIN', 'NET_RAW', 'cap_net_admin'],
        privileged: true,
        volumes: { '/': { bind: '/host', mode: 'rw' } },
      },
      cores: 2,
      memory: 2768,
    });
    const { user } = await kit.ready(image);
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        kit.request(user.user_id, image, { environment: { SHARED: 'request' } }),
      ),
    );
    expect(answers.filter((r) => r.statusCode === 200)).toHaveLength(3);
    await t().app.sessions.settled();
    const kasmId = answers.find((r) => r.statusCode === 200)!.json().kasm_id;
    const spec = kit.engine().containerOf(kasmId)!.spec;
    expect(spec).toEqual({
      sessionId: kasmId,
      userId: user.user_id,
      image: expect.stringMatching(/^kasmweb\/test-\d+:1\.16\.0$/),
      registry: undefined,
      hostname: 'kasm',
      env: { FROM_IMAGE: 'image', SHARED: 'request' },
      shmSizeBytes: 512 * 2 ** 20,
      cores: 2,
      memoryBytes: 2768 * 2 ** 20,
      capAdd: ['SYS_ADMIN', 'NET_ADMIN'],
      webPort: 8443,
    });
    const expiration = (await kit.row(kasmId))!.expiration.getTime();
    expect(Math.abs(expiration - (Date.now() + 600_000))).toBeLessThan(5_000);

    const ported = await kit.installImage({ run_config: { web_port: 3000 } });
    const { user: other } = await kit.ready(ported);
    const { kasm_id } = await kit.running(other.user_id, ported);
    const status = await kit.ok('get_kasm_status', { kasm_id, user_id: other.user_id });
    expect(status.kasm.port).toBe(3000);
    expect(kit.engine().containerOf(kasm_id)!.spec.webPort).toBe(3000);
  });

  test('a workspace that never answers on its web port fails at SESSIONS_START_TIMEOUT_MS, saying where', async () => {
    const { user, image } = await kit.ready();
    kit.engine().answering = false;
    try {
      const { kasm_id } = await kit.running(user.user_id, image);
      expect(await kit.row(kasm_id)).toMatchObject({
        state: 'failed',
        reason: 'The workspace did not answer on 127.0.0.1:1 within 1 second',
      });
      expect(kit.engine().containerOf(kasm_id)).toBeUndefined();
    } finally {
      kit.engine().answering = true;
    }
  });

  test('a start past SESSIONS_START_TIMEOUT_MS fails with a reason saying so', async () => {
    const { user, image } = await kit.ready();
    const release = kit.engine().holdStarts();
    try {
      const { kasm_id } = (await kit.request(user.user_id, image)).json();
      await eventually(async () => (await kit.stateOf(kasm_id)) === 'failed', 5000);
      expect((await kit.row(kasm_id))!.reason).toBe('The workspace did not start within 1 second');
      expect(kit.engine().containerOf(kasm_id)).toBeUndefined();
    } finally {
      release();
    }
    await t().app.sessions.settled();
  });
});

describe('closing the service while sessions start', () => {
  test('starts under way fail with a reason saying so, and leave no container', async () => {
    const t = await buildTestApp({ SESSIONS_ENGINE: 'memory' });
    let closed = false;
    try {
      const kit = sessionsKit(() => t);
      const { user, image } = await kit.ready();
      kit.engine().holdStarts();
      const { kasm_id } = (await kit.request(user.user_id, image)).json();
      await eventually(async () => (await kit.stateOf(kasm_id)) === 'starting');
      const engine = kit.engine();
      await t.app.close();
      closed = true;
      const stored = await t.database.db
        .selectFrom('sessions')
        .selectAll()
        .where('id', '=', parseId(kasm_id)!)
        .executeTakeFirstOrThrow();
      expect(stored).toMatchObject({
        state: 'failed',
        reason: 'The service stopped while the workspace was starting; request it again',
      });
      expect(engine.containerOf(kasm_id)).toBeUndefined();
    } finally {
      if (!closed) await t.app.close();
      await t.close();
    }
  });
});

describe('without a container engine', () => {
  const t = openForTheseTests(() => buildTestApp(), 60_000);

  test('the session operations say so; everything else works', async () => {
    const user = (await t().call('create_user', { target_user: { username: 'no-engine' } })).json().user;
    for (const [op, body] of [
      ['request_kasm', { user_id: user.user_id, image_id: UNKNOWN }],
      ['get_kasm_status', { user_id: user.user_id, kasm_id: UNKNOWN }],
      ['get_kasms', {}],
      ['keepalive', { kasm_id: UNKNOWN }],
      ['destroy_kasm', { kasm_id: UNKNOWN }],
      ['exec_command_kasm', { kasm_id: UNKNOWN, exec_config: { cmd: 'ls' } }],
    ] as const)
      expectError(await t().call(op, body), 400, NO_ENGINE);
    expect(t().app.sessions.engine).toBeUndefined();
    expect(
      (await t().call('get_user', { target_user: { user_id: user.user_id } })).json().user.kasms,
    ).toEqual([]);
    expect((await t().call('get_users')).statusCode).toBe(200);
    expect((await t().call('delete_user', { target_user: { user_id: user.user_id } })).statusCode).toBe(200);
  });
});
