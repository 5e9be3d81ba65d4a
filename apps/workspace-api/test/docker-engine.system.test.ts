import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  createReadStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer as createHttpServer, type Server, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import {
  EngineError,
  SESSION_LABELS,
  type SessionContainerSpec,
  type StartProgress,
} from '../src/sessions/engine';
import { DockerEngine, SCOPE_LABEL, WEB_PORT_LABEL } from '../src/sessions/engine/docker';

/**
 * The Docker session engine on the real engine (`.ci/run` starts it: tools/images/engine.mjs), with
 * the stand-in workspace platform/workspace-test:1 (built here from the local node:24-bookworm-slim when
 * missing: `npm run images:base` makes that one). A system test: `npm run test:system` runs it.
 * Every container made here carries a scope label of this run's and is removed at the end.
 */

const ROOT = join(__dirname, '..', '..', '..');
const DOCKER = existsSync('/usr/bin/docker') ? '/usr/bin/docker' : 'docker';
const IMAGE = 'platform/workspace-test:1';
/** The same image with an entrypoint that does not exist: the engine cannot start it. */
const BROKEN_IMAGE = 'platform/workspace-test:broken-entrypoint';
const SCOPE = `docker-engine-test-${process.pid}`;
const NETWORK = `platform-engine-test-${process.pid}`;

const hex = () => randomBytes(16).toString('hex');
const docker = new Docker();
let engine: DockerEngine;
const madeImages: string[] = [];

const spec = (overrides: Partial<SessionContainerSpec> = {}): SessionContainerSpec => ({
  sessionId: hex(),
  userId: hex(),
  image: IMAGE,
  registry: 'https://index.docker.io/v1/',
  env: {},
  capAdd: [],
  webPort: 6901,
  ...overrides,
});

const must = (command: string, args: string[], input?: string) => {
  const result = spawnSync(command, args, { cwd: ROOT, encoding: 'utf8', input, timeout: 300_000 });
  if (result.status !== 0)
    throw new Error(
      `${command} ${args.join(' ')} failed:\n${result.stderr ?? result.error}\n${result.stdout}`,
    );
  return result.stdout;
};

/** Polls `probe` until it gives a value (not undefined), for at most `ms`. */
async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline)
      throw new Error(`${what}: not within ${ms} ms${last ? ` (${String(last)})` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The address once running (undefined before), throwing if it exited. */
async function runningOf(on: DockerEngine, containerId: string) {
  const status = await on.status(containerId);
  if (status.state === 'exited') throw new Error(`exited: ${status.reason}`);
  return status.state === 'running' ? status.address : undefined;
}

const runningAddress = (containerId: string) => until('running', () => runningOf(engine, containerId));

/** The page, once the workspace's server listens. */
const page = (host: string, port: number, path = '/') =>
  until(`GET http://${host}:${port}${path}`, async () => {
    const response = await fetch(`http://${host}:${port}${path}`);
    return { status: response.status, body: await response.text() };
  });

function websocketEcho(url: string, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url);
    const timer = setTimeout(() => {
      socket.close();
      reject(new Error(`no echo from ${url} within 5 s`));
    }, 5000);
    socket.onopen = () => socket.send(text);
    socket.onmessage = (event) => {
      clearTimeout(timer);
      socket.close(1000);
      resolve(String(event.data));
    };
    socket.onerror = () => {
      clearTimeout(timer);
      reject(new Error(`WebSocket ${url} failed`));
    };
  });
}

/** Output of a command run in the container through the Docker CLI (the engine's own exec is fire-and-forget). */
const dockerExec = (containerId: string, ...command: string[]) => {
  const result = spawnSync(DOCKER, ['exec', containerId, ...command], { encoding: 'utf8' });
  return result.status === 0 ? result.stdout.trim() : undefined;
};

/** This run's containers of one session, straight from the engine. */
const containersOf = (sessionId: string) =>
  docker.listContainers({ all: true, filters: { label: [`${SESSION_LABELS.session}=${sessionId}`] } });

beforeAll(async () => {
  if (typeof WebSocket === 'undefined')
    throw new Error(
      'no global WebSocket: on Node 20 run with NODE_OPTIONS=--experimental-websocket (npm run test-system does)',
    );
  try {
    await docker.ping();
  } catch (error) {
    throw new Error(
      `no Docker engine answers (${String(error)}). Start one with \`node tools/images/engine.mjs ensure\` ` +
        '(as root: installs docker.io and starts dockerd), then `npm run images:base`.',
    );
  }
  if (spawnSync(DOCKER, ['image', 'inspect', IMAGE]).status !== 0)
    must(process.execPath, ['tools/images/build.mjs', '--workspace-test']);
  must(DOCKER, ['build', '-t', BROKEN_IMAGE, '-'], `FROM ${IMAGE}\nENTRYPOINT ["/no/such/entrypoint"]\n`);
  madeImages.push(BROKEN_IMAGE);
  await docker.createNetwork({ Name: NETWORK, Labels: { [SCOPE_LABEL]: SCOPE } });
  engine = new DockerEngine({ scope: SCOPE, allowedCapabilities: ['CHOWN', 'cap_net_bind_service'] });
}, 300_000);

afterAll(async () => {
  const left = await docker.listContainers({ all: true, filters: { label: [`${SCOPE_LABEL}=${SCOPE}`] } });
  await Promise.all(
    left.map((c) =>
      docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => undefined),
    ),
  );
  await docker
    .getNetwork(NETWORK)
    .remove()
    .catch(() => undefined);
  for (const image of madeImages) spawnSync(DOCKER, ['image', 'rm', '-f', image]);
  await engine?.close();
}, 60_000);

describe('a session container', () => {
  let containerId: string;
  const session = spec({
    env: { KASM_TEST_MESSAGE: 'hello <from> the session', OTHER: 'a=b' },
    hostname: 'kasm',
    capAdd: ['NET_ADMIN', 'chown', 'CAP_NET_BIND_SERVICE', 'SYS_ADMIN'],
    cores: 0.5,
    memoryBytes: 256 * 2 ** 20,
    shmSizeBytes: 64 * 2 ** 20,
  });
  const progress: StartProgress[] = [];

  beforeAll(async () => {
    ({ containerId } = await engine.start(session, { onProgress: (p) => progress.push(p) }));
  }, 60_000);

  it('starts, tells its progress, and becomes running with an address', async () => {
    expect(progress[0]).toEqual({ message: `Looking for image ${IMAGE}`, percent: 0 });
    expect(progress.at(-1)).toEqual({ message: 'Container started', percent: 100 });
    const percents = progress.map((p) => p.percent);
    expect(percents).toEqual([...percents].sort((a, b) => a - b));
    const address = await runningAddress(containerId);
    expect(address).toEqual({ host: expect.stringMatching(/^\d+\.\d+\.\d+\.\d+$/), port: 6901 });
  });

  it('serves its page and a WebSocket echo at that address', async () => {
    const { host, port } = await runningAddress(containerId);
    const { status, body } = await page(host, port);
    expect(status).toBe(200);
    expect(body).toContain('<title>Workspace test</title>');
    expect(body).toContain('hello &lt;from&gt; the session');
    expect(body).toContain('user id 1000');
    expect(await websocketEcho(`ws://${host}:${port}/websockify`, 'ping from the test')).toBe(
      'ping from the test',
    );
  });

  it('is made as the spec says: labels, limits, capabilities, and nothing of the host', async () => {
    const info = await docker.getContainer(containerId).inspect();
    expect(info.Name).toBe(`/workspace-session-${session.sessionId}`);
    expect(info.Config.Labels).toEqual({
      [SESSION_LABELS.managed]: 'true',
      [SESSION_LABELS.session]: session.sessionId,
      [SESSION_LABELS.user]: session.userId,
      [WEB_PORT_LABEL]: '6901',
      [SCOPE_LABEL]: SCOPE,
    });
    expect(info.Config.Hostname).toBe('kasm');
    expect(info.Config.Env).toEqual(
      expect.arrayContaining(['KASM_TEST_MESSAGE=hello <from> the session', 'OTHER=a=b']),
    );
    expect(info.Config.User).toBe('1000:1000'); // the image's
    const host = info.HostConfig;
    expect(host.CapDrop).toEqual(['ALL']);
    // Asked NET_ADMIN and SYS_ADMIN too, but only CHOWN and NET_BIND_SERVICE are allowed.
    expect([...(host.CapAdd ?? [])].sort()).toEqual(['CHOWN', 'NET_BIND_SERVICE']);
    expect(host.Privileged).toBe(false);
    expect(host.ReadonlyRootfs).toBe(false);
    expect(host.SecurityOpt).toEqual(['no-new-privileges']);
    expect(host.NanoCpus).toBe(0.5e9);
    expect(host.Memory).toBe(256 * 2 ** 20);
    expect(host.ShmSize).toBe(64 * 2 ** 20);
    expect(host.NetworkMode).toBe('bridge');
    expect(host.PidsLimit).toBe(4096);
    expect(host.LogConfig).toEqual({ Type: 'json-file', Config: { 'max-size': '10m', 'max-file': '3' } });
    expect(host.Binds ?? []).toEqual([]);
    expect(host.Mounts ?? []).toEqual([]);
    expect(host.PortBindings ?? {}).toEqual({});
    expect(info.Mounts).toEqual([]);
    // The process's own view: no effective capability beyond the two, and no way to gain more.
    const status = dockerExec(containerId, 'cat', '/proc/1/status') ?? '';
    expect(status).toMatch(/^CapEff:\s+0+$/m); // uid 1000 holds none in effect
    expect(status).toMatch(/^NoNewPrivs:\s+1$/m);
    const bounding = BigInt(`0x${/^CapBnd:\s+([0-9a-f]+)$/m.exec(status)?.[1]}`);
    expect(bounding).toBe((1n << 0n) | (1n << 10n)); // CAP_CHOWN (0) and CAP_NET_BIND_SERVICE (10)
  });

  it('runs a command in the session, fire-and-forget, as the image user or another', async () => {
    await engine.exec(containerId, {
      cmd: 'echo "$GREETING" > /tmp/greeting; id -u > /tmp/uid',
      env: { GREETING: 'hi there' },
    });
    expect(
      await until(
        'the command ran',
        async () => dockerExec(containerId, 'cat', '/tmp/greeting') || undefined,
      ),
    ).toBe('hi there');
    expect(dockerExec(containerId, 'cat', '/tmp/uid')).toBe('1000');
    await engine.exec(containerId, { cmd: 'id -u > /tmp/root-uid', user: 'root' });
    expect(
      await until(
        'the command ran',
        async () => dockerExec(containerId, 'cat', '/tmp/root-uid') || undefined,
      ),
    ).toBe('0');
  });

  it('is found by list() through its labels, by this scope only', async () => {
    expect(await engine.list()).toContainEqual({
      containerId,
      sessionId: session.sessionId,
      userId: session.userId,
      running: true,
    });
    const other = new DockerEngine({ scope: `${SCOPE}-other` });
    try {
      expect((await other.list()).map((c) => c.containerId)).not.toContain(containerId);
    } finally {
      await other.close();
    }
  });

  it("cannot be made twice for one session (the name is the session's)", async () => {
    const again = engine.start({ ...session });
    await expect(again).rejects.toThrow(EngineError);
    await expect(again).rejects.toThrow(/Conflict|already in use/);
    expect(await containersOf(session.sessionId)).toHaveLength(1); // the first one stays
  });

  it('is stopped and removed by remove(), which then finds nothing to do', async () => {
    const started = Date.now();
    await engine.remove(containerId);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(await engine.status(containerId)).toEqual({ state: 'missing' });
    await expect(docker.getContainer(containerId).inspect()).rejects.toMatchObject({ statusCode: 404 });
    expect((await engine.list()).map((c) => c.containerId)).not.toContain(containerId);
    await expect(engine.remove(containerId)).resolves.toBeUndefined();
    await expect(engine.exec(containerId, { cmd: 'true' })).rejects.toThrow(/No such container/);
  });
});

describe('starts that do not end in a running workspace', () => {
  it('a workspace that exits at once: start resolves, then status says exited with the code and its last words', async () => {
    const { containerId } = await engine.start(spec({ env: { WORKSPACE_TEST_FAIL: '1' } }));
    const reason = await until('exited', async () => {
      const status = await engine.status(containerId);
      return status.state === 'exited' ? status.reason : undefined;
    });
    expect(reason).toBe(
      'The container exited with code 3: workspace-test: WORKSPACE_TEST_FAIL=1, exiting with code 3',
    );
    await engine.remove(containerId);
  });

  it("a container the engine cannot start: removed, and start rejects with the engine's reason", async () => {
    const session = spec({ image: BROKEN_IMAGE });
    const error = await engine.start(session).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(EngineError);
    expect((error as EngineError).unavailable).toBe(false);
    expect((error as Error).message).toMatch(
      /^Could not start the container: .*\/no\/such\/entrypoint.*no such file or directory/,
    );
    expect(await containersOf(session.sessionId)).toEqual([]);
  });

  it('pull never, image missing: a clear error and no container', async () => {
    const never = new DockerEngine({ scope: SCOPE, pull: 'never' });
    const session = spec({ image: 'platform/workspace-test:missing' });
    await expect(never.start(session)).rejects.toThrow(
      new EngineError('Image platform/workspace-test:missing is not present on the engine'),
    );
    await never.close();
    expect(await containersOf(session.sessionId)).toEqual([]);
  });

  it("an image missing from a registry that does not answer: the pull fails with the engine's words", async () => {
    const session = spec({ image: 'workspace/nowhere:1', registry: 'http://127.0.0.1:9/' });
    const error = (await engine.start(session).catch((e: unknown) => e)) as EngineError;
    expect(error).toBeInstanceOf(EngineError);
    expect(error.unavailable).toBe(false);
    expect(error.message).toMatch(
      /^Could not pull image 127\.0\.0\.1:9\/workspace\/nowhere:1: .*connection refused/,
    );
    expect(await containersOf(session.sessionId)).toEqual([]);
  });

  it("a network that does not exist: refused with the engine's words", async () => {
    const lost = new DockerEngine({ scope: SCOPE, network: `${NETWORK}-missing` });
    const session = spec();
    // Docker 20.10 checks the network when it starts the container (newer engines when they create it).
    await expect(lost.start(session)).rejects.toThrow(
      /^Could not (create|start) the container: network platform-engine-test-\d+-missing not found$/,
    );
    await lost.close();
    expect(await containersOf(session.sessionId)).toEqual([]);
  });

  it('pull always with the registry out of reach: the image on the engine still serves', async () => {
    const always = new DockerEngine({ scope: SCOPE, pull: 'always' });
    const progress: string[] = [];
    const { containerId } = await always.start(spec(), { onProgress: (p) => progress.push(p.message) });
    expect((await always.status(containerId)).state).toMatch(/running|created/);
    await always.remove(containerId);
    await always.close();
  }, 30_000);
});

describe('many starts at once', () => {
  it('wait their turn for the engine (maxConcurrentChanges), say so, and all run', async () => {
    const queued = new DockerEngine({ scope: SCOPE, maxConcurrentChanges: 2 });
    try {
      const told: string[][] = Array.from({ length: 12 }, () => []);
      const started = await Promise.all(
        told.map((messages) => queued.start(spec(), { onProgress: (p) => messages.push(p.message) })),
      );
      const waited = told.filter((messages) =>
        messages.some((m) => /^Waiting for the engine \(\d+ ahead\)$/.test(m)),
      );
      expect(waited.length).toBeGreaterThanOrEqual(8);
      for (const { containerId } of started) await until('running', () => runningOf(queued, containerId));
      expect((await queued.list()).length).toBeGreaterThanOrEqual(12);
      await Promise.all(started.map(({ containerId }) => queued.remove(containerId)));
      for (const { containerId } of started)
        expect(await queued.status(containerId)).toEqual({ state: 'missing' });
    } finally {
      await queued.close();
    }
  }, 60_000);

  it('a start cancelled while it waits leaves the line: it rejects, and makes no container', async () => {
    const queued = new DockerEngine({ scope: SCOPE, maxConcurrentChanges: 1 });
    try {
      // The first holds the one slot (it is creating its container) before the second asks for it.
      let holding!: () => void;
      const held = new Promise<void>((resolve) => (holding = resolve));
      const first = queued.start(spec(), {
        onProgress: (p) => {
          if (p.message === 'Creating the container') holding();
        },
      });
      await Promise.race([held, first]);
      const controller = new AbortController();
      const cancelledSession = spec();
      const cancelled = queued.start(cancelledSession, {
        signal: controller.signal,
        onProgress: (p) => {
          if (p.message.startsWith('Waiting for the engine')) controller.abort();
        },
      });
      await expect(cancelled).rejects.toThrow(new EngineError('Cancelled: waiting for the engine'));
      const { containerId } = await first;
      expect(await containersOf(cancelledSession.sessionId)).toEqual([]);
      await queued.remove(containerId);
    } finally {
      await queued.close();
    }
  });
});

describe('on a network of its own', () => {
  it('joins the network and answers the address it has there', async () => {
    const onNetwork = new DockerEngine({ scope: SCOPE, network: NETWORK });
    try {
      const { containerId } = await onNetwork.start(spec());
      const address = await until('running', () => runningOf(onNetwork, containerId));
      const network = await docker.getNetwork(NETWORK).inspect();
      const subnet = network.IPAM?.Config?.[0]?.Subnet ?? ''; // e.g. 172.18.0.0/16
      expect(address.host.split('.').slice(0, 2)).toEqual(subnet.split('.').slice(0, 2));
      const info = await docker.getContainer(containerId).inspect();
      expect(info.HostConfig.NetworkMode).toBe(NETWORK);
      expect(Object.keys(info.NetworkSettings.Networks)).toEqual([NETWORK]);
      expect((await page(address.host, address.port)).body).toContain('Workspace test');
      await onNetwork.remove(containerId);
    } finally {
      await onNetwork.close();
    }
  });
});

describe('an engine that cannot be reached', () => {
  it('refused connection (tcp://127.0.0.1:1): every call rejects as unavailable at once', async () => {
    const away = new DockerEngine({ dockerHost: 'tcp://127.0.0.1:1', requestTimeoutMs: 2000 });
    const started = Date.now();
    for (const call of [
      () => away.start(spec()),
      () => away.status('abc'),
      () => away.list(),
      () => away.remove('abc'),
    ]) {
      const error = (await call().catch((e: unknown) => e)) as EngineError;
      expect(error).toBeInstanceOf(EngineError);
      expect(error.unavailable).toBe(true);
      expect(error.message).toMatch(
        /^The Docker engine \(tcp:\/\/127\.0\.0\.1:1\) cannot be reached: connect ECONNREFUSED/,
      );
    }
    expect(Date.now() - started).toBeLessThan(2000);
    await away.close();
  });

  it('an engine that accepts but never answers: unavailable once requestTimeoutMs has passed', async () => {
    const sockets = new Set<Socket>();
    const silent = createTcpServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    const mute = new DockerEngine({ dockerHost: `tcp://127.0.0.1:${port}`, requestTimeoutMs: 500 });
    try {
      const started = Date.now();
      const error = (await mute.list().catch((e: unknown) => e)) as EngineError;
      const took = Date.now() - started;
      expect(error).toBeInstanceOf(EngineError);
      expect(error.unavailable).toBe(true);
      expect(error.message).toBe(
        `The Docker engine (tcp://127.0.0.1:${port}) did not list the session containers within 0.5 s`,
      );
      expect(took).toBeGreaterThanOrEqual(450);
      expect(took).toBeLessThan(1500);
    } finally {
      await mute.close();
      sockets.forEach((s) => s.destroy());
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});

/**
 * A pull for real: a minimal registry (Docker Registry HTTP API v2, read-only) serving the test image
 * under another name from `docker save`'s layers. Docker trusts 127.0.0.0/8 over plain HTTP by default.
 * A layer of its own makes it an image the engine has never seen: the progress is real.
 */
describe("pulling a missing image from the entry's registry", () => {
  let registry: Server;
  let port: number;
  let dir: string;
  const requests: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'workspace-registry-'));
    must(DOCKER, ['save', '-o', join(dir, 'image.tar'), IMAGE]);
    must('tar', ['-xf', join(dir, 'image.tar'), '-C', dir]);
    rmSync(join(dir, 'image.tar'));
    const [saved] = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as {
      Config: string;
      Layers: string[];
    }[];
    const sha256 = (file: string) =>
      new Promise<string>((resolve, reject) => {
        const hash = createHash('sha256');
        createReadStream(file)
          .on('data', (chunk) => hash.update(chunk))
          .on('end', () => resolve(`sha256:${hash.digest('hex')}`))
          .on('error', reject);
      });
    const blobs = new Map<string, string>(); // digest → file
    const describe = async (file: string, mediaType: string) => {
      const path = join(dir, file);
      const digest = await sha256(path);
      blobs.set(digest, path);
      return { mediaType, size: statSync(path).size, digest };
    };
    // A layer of this run's own (16 MiB of noise) on top: a new image for the engine, whose config
    // and last layer it cannot have (an image whose config it has is not pulled at all, and a layer
    // it has is not downloaded again).
    mkdirSync(join(dir, 'extra', 'opt', 'pulled-test'), { recursive: true });
    writeFileSync(join(dir, 'extra', 'opt', 'pulled-test', 'noise'), randomBytes(16 * 2 ** 20));
    must('tar', ['-cf', join(dir, 'extra.tar'), '-C', join(dir, 'extra'), 'opt']);
    const config = JSON.parse(readFileSync(join(dir, saved.Config), 'utf8')) as {
      rootfs: { diff_ids: string[] };
      history?: object[];
    };
    config.rootfs.diff_ids.push(await sha256(join(dir, 'extra.tar')));
    config.history?.push({ created: new Date().toISOString(), created_by: "the registry test's own layer" });
    writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
    const manifest = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.docker.distribution.manifest.v2+json',
        config: await describe('config.json', 'application/vnd.docker.container.image.v1+json'),
        // Uncompressed layers (the engine detects the compression of what it downloads).
        layers: await Promise.all(
          [...saved.Layers, 'extra.tar'].map((l) =>
            describe(l, 'application/vnd.docker.image.rootfs.diff.tar'),
          ),
        ),
      }),
    );
    const manifestDigest = `sha256:${createHash('sha256').update(manifest).digest('hex')}`;
    registry = createHttpServer((request, response) => {
      const url = request.url ?? '/';
      requests.push(`${request.method} ${url}`);
      const manifestPath = /^\/v2\/workspace\/pulled\/manifests\/([^/]+)$/.exec(url);
      const blobPath = /^\/v2\/workspace\/pulled\/blobs\/(sha256:[0-9a-f]{64})$/.exec(url);
      if (url === '/v2/') {
        response.writeHead(200, { 'docker-distribution-api-version': 'registry/2.0' }).end('{}');
      } else if (manifestPath && (manifestPath[1] === '1' || manifestPath[1] === manifestDigest)) {
        response.writeHead(200, {
          'content-type': 'application/vnd.docker.distribution.manifest.v2+json',
          'content-length': manifest.length,
          'docker-content-digest': manifestDigest,
        });
        response.end(request.method === 'HEAD' ? undefined : manifest);
      } else if (blobPath && blobs.has(blobPath[1])) {
        const file = blobs.get(blobPath[1]) as string;
        response.writeHead(200, {
          'content-type': 'application/octet-stream',
          'content-length': statSync(file).size,
          'docker-content-digest': blobPath[1],
        });
        if (request.method === 'HEAD') response.end();
        else if (file.endsWith('extra.tar')) void trickle(file, response);
        else createReadStream(file).pipe(response);
      } else {
        response
          .writeHead(404, { 'content-type': 'application/json' })
          .end('{"errors":[{"code":"NOT_FOUND"}]}');
      }
    });
    await new Promise<void>((resolve) => registry.listen(0, '127.0.0.1', resolve));
    port = (registry.address() as { port: number }).port;
    madeImages.push(`127.0.0.1:${port}/workspace/pulled:1`);
  }, 120_000);

  /** The new layer at some 16 MiB/s (loopback would give it at once): the engine reports its download in steps. */
  async function trickle(file: string, response: ServerResponse) {
    const data = readFileSync(file);
    for (let offset = 0; offset < data.length && !response.destroyed; offset += 512 * 1024) {
      response.write(data.subarray(offset, offset + 512 * 1024));
      await new Promise((resolve) => setTimeout(resolve, 30));
    }
    response.end();
  }

  afterAll(async () => {
    await new Promise((resolve) => registry?.close(resolve));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('two sessions at once share one pull, both told its progress, then both run', async () => {
    const reference = `127.0.0.1:${port}/workspace/pulled:1`;
    const progress: StartProgress[][] = [[], []];
    const sessions = [0, 1].map((i) =>
      engine.start(spec({ image: 'workspace/pulled:1', registry: `http://127.0.0.1:${port}/` }), {
        onProgress: (p) => progress[i].push(p),
      }),
    );
    const started = await Promise.all(sessions);
    for (const told of progress) {
      const pulling = told.filter((p) => p.message.startsWith(`Pulling image ${reference} (`));
      expect(new Set(pulling.map((p) => p.percent)).size).toBeGreaterThanOrEqual(5); // steps, not a jump
      expect(pulling.at(-1)).toEqual({ message: `Pulling image ${reference} (100 %)`, percent: 80 });
      const percents = told.map((p) => p.percent);
      expect(percents).toEqual([...percents].sort((a, b) => a - b));
      expect(told.at(-1)?.percent).toBe(100);
    }
    // One pull: the manifest by tag was asked for once (Docker asks HEAD or GET, then by digest).
    expect(requests.filter((r) => r.endsWith('/manifests/1'))).toHaveLength(1);
    const blobs = requests.filter((r) => r.startsWith('GET /v2/workspace/pulled/blobs/'));
    expect(blobs.length).toBeGreaterThanOrEqual(2); // the config and the new layer at least
    expect(new Set(blobs).size).toBe(blobs.length); // none fetched twice
    for (const { containerId } of started) {
      const { host, port: webPort } = await runningAddress(containerId);
      expect((await page(host, webPort)).body).toContain('<title>Workspace test</title>');
      expect((await docker.getContainer(containerId).inspect()).Config.Image).toBe(reference);
      await engine.remove(containerId);
    }
  }, 120_000);
});
