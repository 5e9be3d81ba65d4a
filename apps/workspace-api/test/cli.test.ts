import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { openDatabase } from '@platform/db';
import { testDatabase } from '@platform/db/testing';
import { childProcessEnv } from '@platform/testing';
import { buildApp } from '../src/app';
import { loadConfig } from '../src/config';
import type { WorkspaceDatabase } from '../src/db/schema';
import { ALL_USERS_GROUP_ID } from '../src/wire/kasm';
import { seedCommand } from '../src/seed';

const run = promisify(execFile);
const APP_DIR = resolve(__dirname, '..');
const TSX = resolve(APP_DIR, '../../node_modules/.bin/tsx');
const SAMPLE_NAMES = [
  'kasmweb/ubuntu-jammy-desktop:1.16.0',
  'kasmweb/chrome:1.16.0',
  'kasmweb/firefox:1.16.0',
  'kasmweb/only-office:1.16.0',
  'kasmweb/vs-code:1.16.0',
  'nighthawkcoders/kasm_workspaces:latest',
];

/**
 * The command line, run as people run it (`npm run cli -- keys create ...`, `npm run seed`), on a
 * fresh schema of the test PostgreSQL. The app is started after the command exited, on the same
 * schema, to check what the command stored.
 */
describe('workspace-api command line', () => {
  const fresh = testDatabase('workspace');
  const tmp = mkdtempSync(join(tmpdir(), 'workspace-cli-'));
  const env = childProcessEnv(fresh.config, {
    LOG_LEVEL: 'silent',
    ARGON2_MEMORY_KIB: '1024',
    ARGON2_TIME_COST: '1',
  });
  const cli = (args: string[]) =>
    run(TSX, ['--conditions=@platform/source', 'src/cli.ts', ...args], { cwd: APP_DIR, env });

  /** The app on the database the command line used (started after the command exited). */
  async function withApp(use: (app: FastifyInstance) => Promise<void>) {
    const app = await buildApp(loadConfig(env));
    try {
      await use(app);
    } finally {
      await app.close();
    }
  }
  async function withDatabase(use: (db: Kysely<WorkspaceDatabase>) => Promise<void>) {
    const config = loadConfig(env).database;
    const database = await openDatabase<WorkspaceDatabase>(config);
    try {
      await use(database.db);
    } finally {
      await database.close();
    }
  }

  afterAll(async () => {
    rmSync(tmp, { recursive: true, force: true });
    await fresh.cleanup();
  });

  test('keys create prints a working key and secret; keys list shows it; keys disable revokes it', async () => {
    const { stdout } = await cli(['keys', 'create', '--name', 'helpdesk', '--permission', 'Users View']);
    const apiKey = stdout.match(/^api_key: +([A-Za-z0-9]{12})$/m)?.[1];
    const secret = stdout.match(/^api_key_secret: +([A-Za-z0-9]{32})$/m)?.[1];
    expect({ apiKey, secret }).toEqual({ apiKey: expect.any(String), secret: expect.any(String) });
    const credentials = { api_key: apiKey, api_key_secret: secret };
    const call = (app: FastifyInstance, op: string) =>
      app.inject({
        method: 'POST',
        url: `/api/public/${op}`,
        payload: { ...credentials, target_user: { username: 'x' } },
      });

    const listed = (await cli(['keys', 'list'])).stdout;
    expect(listed).toMatch(new RegExp(`^${apiKey}  helpdesk  \\[enabled\\]  Users View$`, 'm'));
    expect(listed).not.toContain(secret);

    await withApp(async (app) => {
      expect((await call(app, 'validate_credentials')).statusCode).toBe(200);
      expect((await call(app, 'get_users')).json()).toEqual({ users: [], total: 0 });
      const denied = await call(app, 'create_user');
      expect({ status: denied.statusCode, body: denied.json() }).toEqual({
        status: 401,
        body: { error_message: 'Unauthorized' },
      });
    });

    expect((await cli(['keys', 'disable', apiKey!])).stdout).toBe(`disabled ${apiKey}\n`);
    await withApp(async (app) => {
      const r = await call(app, 'validate_credentials');
      expect({ status: r.statusCode, body: r.json() }).toEqual({
        status: 403,
        body: { error_message: 'Access Denied' },
      });
    });
  }, 90_000);

  test('registry import installs every sample workspace; a second run skips them all', async () => {
    const first = await cli(['registry', 'import', 'registry/sample-list.json']);
    expect(first.stdout.trim().split('\n')).toEqual([
      ...SAMPLE_NAMES.map((n) => `installed ${n}`),
      'Platform Sample Registry: 6 workspaces, 6 installed, 0 skipped, 0 rejected',
    ]);
    // As `npm run cli -w @platform/workspace-api -- registry import <path>` from the repository root:
    // npm runs the script in the app folder and passes the caller's folder as INIT_CWD.
    const fromRoot = await run(
      TSX,
      [
        '--conditions=@platform/source',
        'src/cli.ts',
        'registry',
        'import',
        'apps/workspace-api/registry/sample-list.json',
      ],
      {
        cwd: APP_DIR,
        env: { ...env, INIT_CWD: join(APP_DIR, '..', '..') },
      },
    );
    expect(fromRoot.stdout).toContain('0 installed, 6 skipped');
    const second = await cli(['registry', 'import', join(APP_DIR, 'registry', 'sample-list.json')]);
    expect(second.stdout.trim().split('\n')).toEqual([
      ...SAMPLE_NAMES.map((n) => `skipped ${n}: already installed`),
      'Platform Sample Registry: 6 workspaces, 0 installed, 6 skipped, 0 rejected',
    ]);
    await withDatabase(async (db) => {
      const rows = await db.selectFrom('images').select(['name', 'memory', 'exec_config']).execute();
      expect(rows.map((r) => r.name).sort()).toEqual([...SAMPLE_NAMES].sort());
      const chrome = rows.find((r) => r.name === 'kasmweb/chrome:1.16.0');
      expect(chrome).toMatchObject({
        memory: 2768,
        exec_config: { go: { cmd: expect.stringContaining('--go') } },
      });
    });
  }, 60_000);

  test('seed adds users (argon2id, all in All Users), groups with members and workspaces; it can run again', async () => {
    const { stdout } = await cli(['seed', '--users=12', '--groups=3']);
    expect(stdout).toMatch(/^workspaces: 0 installed, 6 already installed, 0 rejected/m);
    expect(stdout).toMatch(/^groups: 3 added, \d+ workspace permissions$/m);
    expect(stdout).toMatch(/^users: 12 added, \d+ group memberships$/m);
    const password = stdout.match(/password: (\S+)$/m)?.[1];
    expect(password).toMatch(/\d/);

    await withDatabase(async (db) => {
      const users = await db.selectFrom('users').select(['id', 'username', 'password_hash']).execute();
      expect(users).toHaveLength(12);
      expect(
        users.every(
          (u) => u.password_hash?.startsWith('$argon2id$') && u.username === u.username.toLowerCase(),
        ),
      ).toBe(true);
      const allUsers = await db
        .selectFrom('user_groups')
        .select('user_id')
        .where('group_id', '=', ALL_USERS_GROUP_ID)
        .execute();
      expect(allUsers).toHaveLength(12);
      const groups = await db.selectFrom('groups').select('id').where('is_system', '=', false).execute();
      expect(groups).toHaveLength(3);
      const allowed = await db.selectFrom('group_images').select('group_id').distinct().execute();
      expect(allowed).toHaveLength(3);
    });

    const again = await cli(['seed', '--users=5', '--groups=1']);
    expect(again.stdout).toMatch(/^users: 5 added/m);
    await withDatabase(async (db) => {
      expect(await db.selectFrom('users').select('id').execute()).toHaveLength(17);
      expect(await db.selectFrom('images').select('id').execute()).toHaveLength(6);
    });
  }, 60_000);

  test('bad input exits 1 with a message: unknown permission, broken registry document', async () => {
    await expect(cli(['keys', 'create', '--name', 'n', '--permission', 'Users Watch'])).rejects.toMatchObject(
      {
        code: 1,
        stderr: expect.stringMatching(/unknown permission "Users Watch"; use: Global Admin, Users View/),
      },
    );
    const broken = join(tmp, 'broken-list.json');
    writeFileSync(
      broken,
      JSON.stringify({
        name: 'Broken',
        description: 'no list_url, workspaces not a list',
        icon: 'x.png',
        workspaces: {},
      }),
    );
    await expect(cli(['registry', 'import', broken])).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining(
        `${broken} is not a registry document (schema 1.0 list.json): list_url is required; workspaces must be a list`,
      ),
    });
  }, 60_000);

  test('seed counts must be integers (checked before any change)', async () => {
    const config = loadConfig(env);
    const noDatabase = undefined as unknown as Kysely<WorkspaceDatabase>;
    for (const users of ['-3', '1.5', 'ten', '100001']) {
      await expect(seedCommand(noDatabase, config, { users }, () => undefined)).rejects.toThrow(
        '--users must be an integer from 0 to 100000',
      );
    }
    await expect(seedCommand(noDatabase, config, { groups: '' }, () => undefined)).rejects.toThrow(
      '--groups must be an integer from 0 to 100000',
    );
  });
});
