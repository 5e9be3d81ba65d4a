import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { localServerStatus } from '@platform/db/local';
import { freePort } from '@platform/db/testing';

const run = promisify(execFile);
const APP_DIR = resolve(__dirname, '..');
// Node itself with tsx's loader (not the tsx wrapper, which runs the program in a child process):
// the pid is the service's own, so SIGKILL kills the service.
const NODE_ARGS = ['--import', 'tsx', '--conditions=@platform/source', 'src/cli.ts'];
// A random secret: a literal one would be public (tools/workspace-check scans for them).
const KEY = { api_key: 'LocalStackKey', api_key_secret: randomBytes(24).toString('base64url') };

/**
 * The default database with no DATABASE_URL, used by several processes at once as people do: the
 * service running (`npm start`), a seed from another terminal, a second instance; then a crash of
 * everything (kill -9) and a restart. Real processes, a real PostgreSQL server in a fresh DATA_DIR.
 */
describe('workspace-api on the local PostgreSQL, several processes at once', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'workspace-local-'));
  chmodSync(tmp, 0o755); // as root, the server's own OS user must pass through
  const { DATABASE_URL: _ignored, ...inherited } = process.env;
  let env: NodeJS.ProcessEnv;
  const services: ChildProcess[] = [];

  beforeAll(async () => {
    env = {
      ...inherited,
      NODE_OPTIONS: '',
      LOG_LEVEL: 'silent',
      DATA_DIR: join(tmp, 'data'),
      LOCAL_PG_PORT: String(await freePort()),
      BOOTSTRAP_API_KEY: KEY.api_key,
      BOOTSTRAP_API_KEY_SECRET: KEY.api_key_secret,
      ARGON2_MEMORY_KIB: '1024',
      ARGON2_TIME_COST: '1',
    };
  });

  afterAll(async () => {
    for (const child of services)
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    const { pid } = localServerStatus(join(tmp, 'data'));
    if (pid) process.kill(pid, 'SIGTERM');
    rmSync(tmp, { recursive: true, force: true });
  });

  async function startService(): Promise<{ child: ChildProcess; port: number }> {
    const port = await freePort();
    const child = spawn(process.execPath, [...NODE_ARGS, 'serve', `--port=${port}`], {
      cwd: APP_DIR,
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    services.push(child);
    let stderr = '';
    child.stderr!.on('data', (c) => (stderr += c));
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`the service exited (${child.exitCode}): ${stderr}`);
      const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) return { child, port };
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`the service did not become ready: ${stderr}`);
  }

  const api = async (port: number, operation: string, body: object = {}) => {
    const response = await fetch(`http://127.0.0.1:${port}/api/public/${operation}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...KEY, ...body }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const usernames = async (port: number) => {
    const { status, body } = await api(port, 'get_users');
    expect(status).toBe(200);
    return (body.users as { username: string }[]).map((u) => u.username).sort();
  };
  const exited = (child: ChildProcess) =>
    new Promise<number | string | null>((r) =>
      child.exitCode !== null ? r(child.exitCode) : child.on('exit', (code, signal) => r(code ?? signal)),
    );

  test('a seed while the service runs is served at once; a second instance shares the server; after kill -9 of everything every acknowledged row is back', async () => {
    const first = await startService();
    const server = localServerStatus(env.DATA_DIR!);
    expect(server).toMatchObject({ running: true, port: Number(env.LOCAL_PG_PORT) });
    expect(await usernames(first.port)).toEqual([]);

    // Another terminal: `npm run seed:workspace` while the service runs.
    const { stdout } = await run(process.execPath, [...NODE_ARGS, 'seed', '--users=20', '--groups=2'], {
      cwd: APP_DIR,
      env,
    });
    expect(stdout).toMatch(/users: 20 added/);
    const seeded = await usernames(first.port);
    expect(seeded).toHaveLength(20);

    // A second instance on the same data directory joins the same server (no second postmaster).
    const second = await startService();
    expect(localServerStatus(env.DATA_DIR!).pid).toBe(server.pid);
    expect(await usernames(second.port)).toEqual(seeded);

    // Writes acknowledged by either instance.
    const acknowledged: string[] = [];
    for (let i = 0; i < 10; i++) {
      const username = `acked-${i}`;
      const { status } = await api(i % 2 ? second.port : first.port, 'create_user', {
        target_user: { username, password: 'Secret-123' },
      });
      expect(status).toBe(200);
      acknowledged.push(username);
    }

    // Everything dies at once: both services and the database server.
    for (const { child } of [first, second]) child.kill('SIGKILL');
    process.kill(server.pid!, 'SIGKILL');
    await Promise.all([exited(first.child), exited(second.child)]);
    for (let i = 0; i < 100 && localServerStatus(env.DATA_DIR!).running; i++)
      await new Promise((r) => setTimeout(r, 50));
    expect(localServerStatus(env.DATA_DIR!).running).toBe(false);

    // Started again: the stale server is detected and restarted, with every acknowledged row.
    const third = await startService();
    expect(localServerStatus(env.DATA_DIR!).pid).not.toBe(server.pid);
    expect(await usernames(third.port)).toEqual([...seeded, ...acknowledged].sort());

    // The last process to leave stops the server.
    third.child.kill('SIGTERM');
    expect(await exited(third.child)).toBe(0);
    expect(localServerStatus(env.DATA_DIR!).running).toBe(false);
  }, 120_000);
});
