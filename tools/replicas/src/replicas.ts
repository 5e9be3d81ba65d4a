import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { localDataDir, REPOSITORY_ROOT } from '@platform/db';
import { ensureLocalServer, type LocalServer } from '@platform/db/local';
import { freePort } from '@platform/db/testing';
import {
  haproxyBinary,
  haproxyConfig,
  readStats,
  readStreamStats,
  startHaproxy,
  type AddressLimits,
  type ServerStats,
  type StreamServerStats,
} from './haproxy';

export interface ReplicasOptions {
  /** Apps to run (directories of apps/); default: every app. */
  services?: string[];
  /** Replicas of each service. */
  replicas: number;
  /** Redis holding the shared rate-limit counters (`REDIS_URL` of every replica). */
  redisUrl: string;
  /** PostgreSQL of every replica; default: DATABASE_URL, else the repository's local server. */
  databaseUrl?: string;
  /** Addresses every replica trusts to say who the client is (TRUST_PROXY); default: HAProxy's 127.0.0.1. */
  trustProxy?: string;
  /** HAProxy's per-address request and connection limits; default: ADDRESS_LIMITS (src/haproxy.ts). */
  addressLimits?: AddressLimits;
  /** Environment of every replica (and of its migration), e.g. LOG_LEVEL. */
  env?: Record<string, string>;
  /** Environment of one service's replicas, by service, e.g. its DB_SCHEMA or WRITE_LIMIT_PER_CLIENT. */
  serviceEnv?: Record<string, Record<string, string>>;
  /** Each line a replica or HAProxy writes (`source` is `<service>/<replica>` or `haproxy`). */
  onOutput?: (source: string, line: string) => void;
  /** The environment the database and HAProxy settings are read from (default: process.env). */
  processEnv?: NodeJS.ProcessEnv;
}

export interface Replica {
  service: string;
  /** HAProxy's name of it (`r1`, `r2`, …), also what the x-replica response header says. */
  name: string;
  port: number;
  /** Its own address, bypassing the balancer. */
  url: string;
  process: ChildProcess;
  /** Resolves when the process has exited (at once if it has), with when. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
}

export interface ReplicaService {
  name: string;
  /** The balancer's address of this service. */
  url: string;
  replicas: Replica[];
}

export interface ReplicaSet {
  services: ReplicaService[];
  /** HAProxy's statistics page (`;csv` for the machine-readable form). */
  statsUrl: string;
  databaseUrl: string;
  /** The generated HAProxy configuration. */
  haproxyConfig: string;
  haproxy: ChildProcess;
  service(name: string): ReplicaService;
  stats(): Promise<ServerStats[]>;
  /** The event streams each replica holds through HAProxy. */
  streamStats(): Promise<StreamServerStats[]>;
  /** Stops HAProxy, then every replica gracefully, then leaves the local database server. Idempotent. */
  stop(): Promise<void>;
}

/** How long a stopped replica keeps serving while not ready (longer than HAProxy's fall of 2 checks, 1 s apart). */
export const SHUTDOWN_DRAIN_MS = 3_000;
/** Every app of the repository (a directory of apps/ with a package.json). */
export function allServices(root = REPOSITORY_ROOT): string[] {
  return readdirSync(join(root, 'apps'))
    .filter((name) => existsSync(join(root, 'apps', name, 'package.json')))
    .sort();
}

/** How long a replica may take to answer /readyz, and to exit after SIGTERM. */
const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 15_000;

/**
 * Runs the BUILT services (`apps/<service>/dist`) as `replicas` processes each, every one on its own
 * free port of 127.0.0.1, on one PostgreSQL (migrated once per service beforehand; the replicas start
 * with MIGRATE_ON_START=false, as replicas of a real deployment do), sharing rate limits through
 * `redisUrl`, behind one HAProxy with a frontend per service on a free port. Resolves once every
 * replica is ready and HAProxy sees them all up; on failure, whatever started is stopped again.
 */
export async function startReplicas(options: ReplicasOptions): Promise<ReplicaSet> {
  const processEnv = options.processEnv ?? process.env;
  const services = options.services ?? allServices();
  const missing = services.filter(
    (name) =>
      !['main.js', 'cli.js'].every((file) => existsSync(join(REPOSITORY_ROOT, 'apps', name, 'dist', file))),
  );
  if (missing.length) {
    throw new Error(`not built: ${missing.join(', ')} — run \`npx nx run-many -t build\` first`);
  }
  if (!Number.isInteger(options.replicas) || options.replicas < 1)
    throw new Error('replicas must be 1 or more');
  const binary = haproxyBinary(processEnv);
  const output = options.onOutput ?? (() => undefined);

  const started: { localServer?: LocalServer; replicas: Replica[]; haproxy?: ChildProcess; dir?: string } = {
    replicas: [],
  };
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      if (started.haproxy && started.haproxy.exitCode === null && started.haproxy.signalCode === null) {
        started.haproxy.kill('SIGTERM');
        await exitOf(started.haproxy);
      }
      await Promise.all(started.replicas.map((replica) => stopReplica(replica)));
      await started.localServer?.release();
      if (started.dir) rmSync(started.dir, { recursive: true, force: true });
    })());

  try {
    let databaseUrl = options.databaseUrl ?? processEnv.DATABASE_URL;
    if (!databaseUrl) {
      const port = processEnv.LOCAL_PG_PORT ? Number(processEnv.LOCAL_PG_PORT) : undefined;
      started.localServer = await ensureLocalServer({ dataDir: localDataDir(processEnv.DATA_DIR), port });
      databaseUrl = started.localServer.url;
    }
    const ports = await distinctFreePorts(services.length * (options.replicas + 1) + 1);
    const envOf = (service: string): NodeJS.ProcessEnv => ({
      ...processEnv,
      // Never Jest's or tsx's loader flags: the replicas are plain built Node programs.
      NODE_OPTIONS: '',
      ...options.env,
      ...options.serviceEnv?.[service],
      DATABASE_URL: databaseUrl,
      REDIS_URL: options.redisUrl,
      TRUST_PROXY: options.trustProxy ?? '127.0.0.1',
      HOST: '127.0.0.1',
      MIGRATE_ON_START: 'false',
      // After SIGTERM a replica serves on, not ready, until HAProxy's checks (2 x 1 s) have taken it out.
      SHUTDOWN_DRAIN_MS: String(SHUTDOWN_DRAIN_MS),
    });

    // Migrations run once per service, before any replica serves (never N replicas racing at it).
    await Promise.all(services.map((service) => migrate(service, envOf(service), output)));

    const layout = services.map((name) => ({
      name,
      port: ports.pop()!,
      replicas: Array.from({ length: options.replicas }, (_, i) => ({
        name: `r${i + 1}`,
        port: ports.pop()!,
      })),
    }));
    const replicaServices: ReplicaService[] = layout.map((service) => ({
      name: service.name,
      url: `http://127.0.0.1:${service.port}`,
      replicas: service.replicas.map((r) => {
        const replica = startReplica(service.name, r.name, r.port, envOf(service.name), output);
        started.replicas.push(replica);
        return replica;
      }),
    }));
    await Promise.all(started.replicas.map((replica) => waitUntilReady(replica)));

    const statsPort = ports.pop()!;
    const config = haproxyConfig(layout, statsPort, options.addressLimits);
    started.dir = mkdtempSync(join(tmpdir(), 'platform-replicas-'));
    const configFile = join(started.dir, 'haproxy.cfg');
    writeFileSync(configFile, config);
    const haproxy = startHaproxy(binary, configFile);
    started.haproxy = haproxy;
    forwardLines(haproxy.stdout!, (line) => output('haproxy', line));
    forwardLines(haproxy.stderr!, (line) => output('haproxy', line));
    const statsUrl = `http://127.0.0.1:${statsPort}/`;
    await untilAllUp(statsUrl, haproxy, started.replicas.length);

    return {
      services: replicaServices,
      statsUrl,
      databaseUrl,
      haproxyConfig: config,
      haproxy,
      service(name) {
        const found = replicaServices.find((s) => s.name === name);
        if (!found) throw new Error(`no service ${name} in this replica set`);
        return found;
      },
      stats: () => readStats(statsUrl),
      streamStats: () => readStreamStats(statsUrl),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

function startReplica(
  service: string,
  name: string,
  port: number,
  env: NodeJS.ProcessEnv,
  output: (source: string, line: string) => void,
): Replica {
  const child = spawn(process.execPath, [join('apps', service, 'dist', 'main.js')], {
    cwd: REPOSITORY_ROOT,
    env: { ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group: a terminal's Ctrl-C reaches the launcher only, which then stops each
    // replica once (a second signal would make a service skip its graceful shutdown).
    detached: true,
  });
  const source = `${service}/${name}`;
  forwardLines(child.stdout!, (line) => output(source, line));
  forwardLines(child.stderr!, (line) => output(source, line));
  return { service, name, port, url: `http://127.0.0.1:${port}`, process: child, exited: exitOf(child) };
}

async function stopReplica(replica: Replica): Promise<void> {
  const child = replica.process;
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
  await replica.exited;
  clearTimeout(timer);
}

async function migrate(
  service: string,
  env: NodeJS.ProcessEnv,
  output: (source: string, line: string) => void,
) {
  const child = spawn(process.execPath, [join('apps', service, 'dist', 'cli.js'), 'migrate'], {
    cwd: REPOSITORY_ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const keep = (line: string) => {
    lines.push(line);
    output(`${service}/migrate`, line);
  };
  forwardLines(child.stdout!, keep);
  forwardLines(child.stderr!, keep);
  const { code } = await exitOf(child);
  if (code !== 0)
    throw new Error(`${service}: migrate failed (exit ${code}):\n${lines.slice(-20).join('\n')}`);
}

/** Polls a replica's own /readyz until 200; fails at once when the process exits. */
async function waitUntilReady(replica: Replica): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let exited = false;
  void replica.exited.then(() => (exited = true));
  for (;;) {
    if (exited) throw new Error(`${replica.service}/${replica.name} exited before it was ready`);
    try {
      if ((await fetch(`${replica.url}/readyz`)).status === 200) return;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline)
      throw new Error(`${replica.service}/${replica.name} not ready after ${READY_TIMEOUT_MS} ms`);
    await delay(100);
  }
}

/** Waits until HAProxy's statistics show `count` replicas, all UP. */
async function untilAllUp(statsUrl: string, haproxy: ChildProcess, count: number): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (haproxy.exitCode !== null || haproxy.signalCode !== null) throw new Error('HAProxy exited at start');
    try {
      const stats = await readStats(statsUrl);
      if (stats.length === count && stats.every((s) => s.status === 'UP')) return;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) throw new Error('HAProxy did not see every replica up within 15 s');
    await delay(100);
  }
}

async function distinctFreePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

function exitOf(
  child: ChildProcess,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode, at: Date.now() });
  }
  return new Promise((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal, at: Date.now() })),
  );
}

function forwardLines(stream: Readable, onLine: (line: string) => void): void {
  let rest = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const lines = (rest + chunk).split('\n');
    rest = lines.pop() ?? '';
    for (const line of lines) onLine(line);
  });
  stream.on('end', () => {
    if (rest) onLine(rest);
  });
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
