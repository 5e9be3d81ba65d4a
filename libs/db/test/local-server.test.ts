import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { Client } from 'pg';
import { localDataDir, openDatabase, REPOSITORY_ROOT } from '../src';
import { ensureLocalServer, localServerStatus, type LocalServer } from '../src/local-server';
import { freePort } from '../src/testing';

async function query<T>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text, values)).rows as T[];
  } finally {
    await client.end();
  }
}

async function waitUntilDead(pid: number) {
  for (let i = 0; i < 100; i++) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`process ${pid} still runs`);
}

/** The repository's own PostgreSQL server (no DATABASE_URL): real servers in temporary directories. */
describe('the local PostgreSQL server', () => {
  const dirs: string[] = [];
  const held: LocalServer[] = [];
  const tempDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'local-pg-'));
    chmodSync(dir, 0o755); // mkdtemp makes it private; as root the server's own user must pass through
    dirs.push(dir);
    return join(dir, 'data');
  };
  afterAll(async () => {
    for (const server of held) await server.release().catch(() => undefined);
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  test('from nothing: creates the cluster and a private password, serves on loopback only; a second process joins; the last to leave stops it', async () => {
    const dataDir = tempDir();
    const port = await freePort();
    const first = await ensureLocalServer({ dataDir, port });
    held.push(first);
    expect(first).toMatchObject({ started: true, port, dataDir });
    expect(statSync(join(dataDir, 'password')).mode & 0o077).toBe(0);
    const [settings] = await query<{ listen: string; version: string }>(
      first.url,
      `select current_setting('listen_addresses') as listen, current_setting('server_version_num') as version`,
    );
    expect(settings.listen).toBe('127.0.0.1');
    expect(settings.version).toMatch(/^15\d{4}$/);
    // The password is required: the generated one is the only way in.
    const wrong = new URL(first.url);
    wrong.password = 'guess';
    await expect(query(wrong.toString(), 'select 1')).rejects.toThrow(/password authentication failed/);

    const second = await ensureLocalServer({ dataDir, port: await freePort() }); // a running server keeps its port
    held.push(second);
    expect(second).toMatchObject({ started: false, port, url: first.url });
    await query(second.url, 'create table kept (n int primary key); insert into kept values (1), (2)');

    expect(await first.release()).toEqual({ stopped: false });
    expect(await query(second.url, 'select count(*)::int as n from kept')).toEqual([{ n: 2 }]);
    expect(await second.release()).toEqual({ stopped: true });
    expect(localServerStatus(dataDir)).toEqual({ running: false });

    // From an existing directory: started again, with its data.
    const again = await ensureLocalServer({ dataDir, port });
    held.push(again);
    expect(again.started).toBe(true);
    expect(await query(again.url, 'select n from kept order by n')).toEqual([{ n: 1 }, { n: 2 }]);
    expect(await again.release()).toEqual({ stopped: true });
  }, 60_000);

  test('racing starters: exactly one starts the server, all share it', async () => {
    const dataDir = tempDir();
    const port = await freePort();
    const servers = await Promise.all(Array.from({ length: 4 }, () => ensureLocalServer({ dataDir, port })));
    held.push(...servers);
    expect(servers.filter((s) => s.started)).toHaveLength(1);
    expect(new Set(servers.map((s) => s.url)).size).toBe(1);
    const results = await Promise.all(servers.map((s) => s.release()));
    expect(results.filter((r) => r.stopped)).toHaveLength(1);
    expect(localServerStatus(dataDir).running).toBe(false);
  }, 60_000);

  test('a port taken by another program is a clear error naming the port and the variable to change', async () => {
    const squatter = createServer();
    await new Promise<void>((r) => squatter.listen(0, '127.0.0.1', r));
    const { port } = squatter.address() as AddressInfo;
    try {
      const dataDir = tempDir();
      await expect(ensureLocalServer({ dataDir, port })).rejects.toThrow(
        new RegExp(`port ${port} on 127\\.0\\.0\\.1 is already in use.*set LOCAL_PG_PORT to a free port`),
      );
      expect(localServerStatus(dataDir).running).toBe(false);
    } finally {
      await new Promise((r) => squatter.close(r));
    }
  }, 60_000);

  test('a server killed with SIGKILL is found stale and restarted, with every committed row', async () => {
    const dataDir = tempDir();
    const port = await freePort();
    const crashed = await ensureLocalServer({ dataDir, port });
    await query(
      crashed.url,
      'create table acknowledged (n int primary key); insert into acknowledged select generate_series(1, 500)',
    );
    const { pid } = localServerStatus(dataDir);
    process.kill(pid!, 'SIGKILL');
    await waitUntilDead(pid!);

    const restarted = await ensureLocalServer({ dataDir, port });
    held.push(restarted);
    expect(restarted.started).toBe(true);
    expect(localServerStatus(dataDir).pid).not.toBe(pid);
    expect(await query(restarted.url, 'select count(*)::int as n from acknowledged')).toEqual([{ n: 500 }]);
    // The handle of the crashed server touches nothing: the new server keeps running.
    expect(await crashed.release()).toEqual({ stopped: false });
    expect(localServerStatus(dataDir).running).toBe(true);
    expect(await restarted.release()).toEqual({ stopped: true });
  }, 60_000);

  test('openDatabase without a URL: a pool on the local server in the service schema, which leaves with close()', async () => {
    const dataDir = tempDir();
    const database = await openDatabase<Record<string, never>>({
      dataDir,
      localPort: await freePort(),
      schema: 'svc_local',
    });
    expect(database.kind).toBe('local');
    const { rows } = await sql<{ path: string }>`select current_setting('search_path') as path`.execute(
      database.db,
    );
    expect(rows[0].path).toBe('svc_local');
    expect(localServerStatus(dataDir).running).toBe(true);
    await database.close();
    expect(localServerStatus(dataDir).running).toBe(false);
  }, 60_000);

  test('DATA_DIR: unset means <root>/.data/postgres; a relative path is taken from the repository root', () => {
    expect(existsSync(join(REPOSITORY_ROOT, 'nx.json'))).toBe(true);
    expect(localDataDir(undefined)).toBe(join(REPOSITORY_ROOT, '.data', 'postgres'));
    expect(localDataDir('')).toBe(join(REPOSITORY_ROOT, '.data', 'postgres'));
    expect(localDataDir('.data/other')).toBe(join(REPOSITORY_ROOT, '.data', 'other'));
    expect(localDataDir('/srv/pg')).toBe('/srv/pg');
  });

  test('as root, a directory the server user ("postgres") cannot reach is a clear error; for other users it just works', async () => {
    const parent = join(tempDir(), 'private');
    mkdirSync(parent, { recursive: true });
    chmodSync(parent, 0o700);
    const dataDir = join(parent, 'pg');
    if (process.getuid?.() === 0) {
      await expect(ensureLocalServer({ dataDir, port: await freePort() })).rejects.toThrow(
        /cannot reach .*private\/pg.*Set DATA_DIR/,
      );
    } else {
      const server = await ensureLocalServer({ dataDir, port: await freePort() });
      held.push(server);
      expect(server.started).toBe(true);
      await server.release();
    }
  }, 60_000);
});
