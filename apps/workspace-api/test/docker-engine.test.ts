import { hostname } from 'node:os';
import { EngineError, SESSION_LABELS, type SessionContainerSpec } from '../src/sessions/engine';
import {
  demuxLogs,
  DockerEngine,
  imageReference,
  Limiter,
  parseDockerHost,
  PullProgress,
  resolveDockerEngineOptions,
  SCOPE_LABEL,
  splitReference,
  statusFromInspect,
  WEB_PORT_LABEL,
} from '../src/sessions/engine/docker';

/**
 * The Docker engine's pure parts, with no engine: DOCKER_HOST, the registry → image reference rule,
 * the options, the pull's progress, what inspect's answer means, and the create body. Its behaviour
 * on a real engine is docker-engine.system.test.ts.
 */

describe('DOCKER_HOST', () => {
  it.each([
    ['unix:///var/run/docker.sock', { socketPath: '/var/run/docker.sock' }],
    ['unix:///run/user/1000/docker.sock', { socketPath: '/run/user/1000/docker.sock' }],
    ['tcp://127.0.0.1:2375', { host: '127.0.0.1', port: 2375, protocol: 'http' }],
    ['tcp://docker.internal:12375/', { host: 'docker.internal', port: 12375, protocol: 'http' }],
    ['tcp://engine', { host: 'engine', port: 2375, protocol: 'http' }],
    ['TCP://[::1]:2375', { host: '::1', port: 2375, protocol: 'http' }],
    [' tcp://10.0.0.5:2375 ', { host: '10.0.0.5', port: 2375, protocol: 'http' }],
  ])('%s', (value, connection) => {
    expect(parseDockerHost(value)).toEqual(connection);
  });

  it.each([
    ['unix://', /no socket path/],
    ['unix://relative.sock', /no socket path/],
    ['/var/run/docker.sock', /no scheme/],
    ['127.0.0.1:2375', /no scheme/],
    ['ssh://me@host', /the ssh:\/\/ scheme is not supported/],
    ['npipe:////./pipe/docker_engine', /the npipe:\/\/ scheme is not supported/],
    ['https://host:2376', /the https:\/\/ scheme is not supported/],
    ['tcp://host:2375/prefix', /only a host and a port/],
    ['tcp://user@host:2375', /only a host and a port/],
    ['tcp://host:99999', /not an address/],
  ])('refuses %s', (value, problem) => {
    expect(() => parseDockerHost(value)).toThrow(problem);
    expect(() => parseDockerHost(value)).toThrow(
      /expected unix:\/\/\/path\/to\/docker.sock or tcp:\/\/host:port/,
    );
  });
});

describe("an image entry's name and docker_registry → the reference pulled and run", () => {
  it.each([
    ['kasmweb/chrome:1.16.0', undefined, 'kasmweb/chrome:1.16.0'],
    ['kasmweb/chrome:1.16.0', null, 'kasmweb/chrome:1.16.0'],
    ['kasmweb/chrome:1.16.0', '', 'kasmweb/chrome:1.16.0'],
    // Kasm's default: Docker Hub's credentials key, not a prefix.
    ['kasmweb/chrome:1.16.0', 'https://index.docker.io/v1/', 'kasmweb/chrome:1.16.0'],
    ['kasmweb/chrome:1.16.0', 'https://registry-1.docker.io', 'kasmweb/chrome:1.16.0'],
    ['kasmweb/chrome:1.16.0', 'docker.io', 'kasmweb/chrome:1.16.0'],
    // Another registry: its host (and port) in front; the URL's path is no namespace.
    ['team/desktop:1', 'https://registry.example.com', 'registry.example.com/team/desktop:1'],
    ['team/desktop:1', 'https://registry.example.com:5000/v2/', 'registry.example.com:5000/team/desktop:1'],
    ['team/desktop:1', 'registry.example.com:5000', 'registry.example.com:5000/team/desktop:1'],
    ['desktop:1', 'http://127.0.0.1:5000/', '127.0.0.1:5000/desktop:1'],
    ['desktop:1', 'https://REGISTRY.Example.com', 'registry.example.com/desktop:1'],
    // A name that names its registry host is used as it is, whatever docker_registry says.
    ['ghcr.io/owner/image:tag', 'https://ghcr.io', 'ghcr.io/owner/image:tag'],
    ['ghcr.io/owner/image:tag', 'https://registry.example.com', 'ghcr.io/owner/image:tag'],
    ['localhost:5000/image:1', 'https://registry.example.com', 'localhost:5000/image:1'],
    ['localhost/image:1', 'https://registry.example.com', 'localhost/image:1'],
    // `library` is a Docker Hub namespace, not a host.
    ['library/ubuntu:24.04', 'https://registry.example.com', 'registry.example.com/library/ubuntu:24.04'],
  ])('%s from %s → %s', (name, registry, reference) => {
    expect(imageReference(name, registry)).toBe(reference);
  });

  it('a docker_registry that is no address is an EngineError (shown to the user)', () => {
    expect(() => imageReference('a/b:1', 'https://')).toThrow(EngineError);
    expect(() => imageReference('a/b:1', 'not a host at all')).toThrow(
      "The image's docker_registry (not a host at all) is not a registry address",
    );
  });

  it.each([
    ['kasmweb/chrome:1.16.0', { repository: 'kasmweb/chrome', tag: '1.16.0' }],
    ['ubuntu', { repository: 'ubuntu', tag: 'latest' }],
    ['localhost:5000/image', { repository: 'localhost:5000/image', tag: 'latest' }],
    ['localhost:5000/image:2', { repository: 'localhost:5000/image', tag: '2' }],
    [`ubuntu@sha256:${'a'.repeat(64)}`, { repository: 'ubuntu', tag: `sha256:${'a'.repeat(64)}` }],
  ])('pull %s as %j', (reference, parts) => {
    expect(splitReference(reference)).toEqual(parts);
  });
});

describe('options', () => {
  it('defaults: pull if missing, 10 s per call, 10 min per pull, no capability, the default bridge', () => {
    expect(resolveDockerEngineOptions({})).toEqual({
      connection: undefined,
      network: undefined,
      pull: 'if-missing',
      allowedCapabilities: [],
      requestTimeoutMs: 10_000,
      pullTimeoutMs: 600_000,
      hostname: hostname(),
      scope: undefined,
      maxConcurrentChanges: 4,
    });
  });

  it('the hostname is the TCP host of the engine unless given', () => {
    expect(resolveDockerEngineOptions({ dockerHost: 'tcp://docker-1:2375' }).hostname).toBe('docker-1');
    expect(resolveDockerEngineOptions({ dockerHost: 'unix:///var/run/docker.sock' }).hostname).toBe(
      hostname(),
    );
    expect(
      resolveDockerEngineOptions({ dockerHost: 'tcp://docker-1:2375', hostname: 'agent-7' }).hostname,
    ).toBe('agent-7');
  });

  it('capabilities are Docker names, with or without CAP_, in any case, once each', () => {
    expect(
      resolveDockerEngineOptions({ allowedCapabilities: ['cap_sys_admin', 'SYS_ADMIN', 'Net_Admin'] })
        .allowedCapabilities,
    ).toEqual(['SYS_ADMIN', 'NET_ADMIN']);
  });

  it('an empty DOCKER_HOST or network means unset', () => {
    expect(resolveDockerEngineOptions({ dockerHost: '', network: ' ' })).toMatchObject({
      connection: undefined,
      network: undefined,
    });
  });

  it('every problem at once, each named', () => {
    let message = '';
    try {
      resolveDockerEngineOptions({
        dockerHost: 'ssh://host',
        network: 'host',
        pull: 'sometimes' as never,
        allowedCapabilities: ['ALL', 'sys-admin'],
        requestTimeoutMs: 0,
        pullTimeoutMs: 1.5,
        scope: 'a b',
        maxConcurrentChanges: 0,
      });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message.split('\n')).toEqual([
      'invalid Docker engine options:',
      '  DOCKER_HOST ssh://host: the ssh:// scheme is not supported (expected unix:///path/to/docker.sock or tcp://host:port)',
      '  network host: a network name other than host and none',
      '  pull sometimes: one of if-missing, always, never',
      '  allowedCapabilities: ALL is refused (it would amount to a privileged container)',
      '  allowedCapabilities: SYS-ADMIN is not a capability name',
      '  requestTimeoutMs 0: a positive whole number of ms',
      '  pullTimeoutMs 1.5: a positive whole number of ms',
      '  maxConcurrentChanges 0: a whole number from 1',
      '  scope a b: letters, digits, _ . : - (at most 128)',
    ]);
  });

  it.each(['none', 'container:abc', '-net', 'a b'])('refuses the network %s', (network) => {
    expect(() => resolveDockerEngineOptions({ network })).toThrow(`network ${network}:`);
  });

  it('the engine refuses bad options when made, before any call', () => {
    expect(() => new DockerEngine({ network: 'host' })).toThrow(/network host/);
  });
});

describe('the line for container changes', () => {
  const tick = () => new Promise((resolve) => setImmediate(resolve));

  it('runs at most max tasks at once, the others in order as slots free up', async () => {
    const limiter = new Limiter(2);
    let running = 0;
    let most = 0;
    const order: number[] = [];
    const gates: (() => void)[] = [];
    const tasks = [0, 1, 2, 3, 4].map((i) =>
      limiter.run(async () => {
        running++;
        most = Math.max(most, running);
        order.push(i);
        await new Promise<void>((resolve) => gates.push(resolve));
        running--;
        return i;
      }),
    );
    await tick();
    expect(order).toEqual([0, 1]);
    expect(limiter.waiting).toBe(3);
    expect(limiter.ahead).toBe(5);
    gates[1]();
    await tick();
    expect(order).toEqual([0, 1, 2]);
    // A task started meanwhile does not jump the line (the freed slot went to task 2).
    const late = limiter.run(async () => 'late');
    await tick();
    expect(order).toEqual([0, 1, 2]);
    for (let i = 0; i < 6; i++) {
      gates.forEach((open) => open());
      await tick();
    }
    expect(await Promise.all(tasks)).toEqual([0, 1, 2, 3, 4]);
    expect(await late).toBe('late');
    expect(most).toBe(2);
    expect(limiter.waiting).toBe(0);
    expect(limiter.ahead).toBe(0);
  });

  it('a waiting task whose signal aborts leaves the line; a failing task frees its slot', async () => {
    const limiter = new Limiter(1);
    let open!: () => void;
    const first = limiter.run(() => new Promise<void>((resolve) => (open = resolve)));
    const controller = new AbortController();
    const cancelled = limiter.run(async () => 'never', controller.signal);
    const failing = limiter.run(async () => {
      throw new Error('refused');
    });
    await tick();
    expect(limiter.waiting).toBe(2);
    controller.abort(new Error('gone'));
    await expect(cancelled).rejects.toThrow('gone');
    expect(limiter.waiting).toBe(1);
    open();
    await first;
    await expect(failing).rejects.toThrow('refused');
    await expect(limiter.run(async () => 'free again')).resolves.toBe('free again');
  });
});

describe("a pull's progress", () => {
  it('counts the layers to fetch alike, download 80 % and extraction 20 % of each, never going back', () => {
    const progress = new PullProgress();
    const seen = [
      { status: 'Pulling from team/desktop', id: '1' },
      { status: 'Already exists', id: 'aaaaaaaaaaaa' },
      { status: 'Pulling fs layer', id: 'bbbbbbbbbbbb' },
      { status: 'Pulling fs layer', id: 'cccccccccccc' },
      { status: 'Waiting', id: 'cccccccccccc' },
      { status: 'Downloading', id: 'bbbbbbbbbbbb', progressDetail: { current: 50, total: 100 } },
      { status: 'Downloading', id: 'bbbbbbbbbbbb', progressDetail: { current: 100, total: 100 } },
      { status: 'Download complete', id: 'bbbbbbbbbbbb' },
      { status: 'Extracting', id: 'bbbbbbbbbbbb', progressDetail: { current: 50, total: 100 } },
      { status: 'Pull complete', id: 'bbbbbbbbbbbb' },
      { status: 'Downloading', id: 'cccccccccccc', progressDetail: { current: 1, total: 4 } },
      { status: 'Retrying in 5 seconds', id: 'cccccccccccc' },
      { status: 'Downloading', id: 'cccccccccccc', progressDetail: { current: 0, total: 4 } }, // restarted
      { status: 'Verifying Checksum', id: 'cccccccccccc' },
      { status: 'Extracting', id: 'cccccccccccc', progressDetail: { current: 4, total: 4 } },
      { status: 'Pull complete', id: 'cccccccccccc' },
      { status: 'Digest: sha256:0123' },
      { status: 'Status: Downloaded newer image for team/desktop:1' },
    ].map((event) => progress.update(event));
    expect(seen).toEqual([0, 0, 0, 0, 0, 20, 40, 40, 45, 50, 60, 60, 60, 90, 100, 100, 100, 100]);
  });

  it('an image whose layers are all present is no work: 0 until it ends', () => {
    const progress = new PullProgress();
    expect(progress.update({ status: 'Already exists', id: 'aaaaaaaaaaaa' })).toBe(0);
    expect(progress.update({ status: 'Status: Downloaded newer image for x:1' })).toBe(0);
  });
});

describe("what inspect's answer means", () => {
  const labels = { [WEB_PORT_LABEL]: '8443' };
  it('running: the address on the default bridge, or on the configured network, at the labelled port', () => {
    const running = {
      Config: { Labels: labels },
      State: { Status: 'running', Running: true },
      NetworkSettings: {
        IPAddress: '172.17.0.5',
        Networks: { bridge: { IPAddress: '172.17.0.5' }, sessions: { IPAddress: '10.9.0.3' } },
      },
    };
    expect(statusFromInspect(running, undefined)).toEqual({
      state: 'running',
      address: { host: '172.17.0.5', port: 8443 },
    });
    expect(statusFromInspect(running, 'sessions')).toEqual({
      state: 'running',
      address: { host: '10.9.0.3', port: 8443 },
    });
    // Not (yet) on the configured network: not reachable, so not running for the service.
    expect(statusFromInspect(running, 'elsewhere')).toEqual({ state: 'created' });
    // No readable label: Kasm's port.
    expect(
      statusFromInspect({ ...running, Config: { Labels: { [WEB_PORT_LABEL]: 'x' } } }, undefined),
    ).toEqual({
      state: 'running',
      address: { host: '172.17.0.5', port: 6901 },
    });
    // Paused by someone on the engine: still holds its address.
    expect(
      statusFromInspect({ ...running, State: { Status: 'paused', Running: true, Paused: true } }, undefined),
    ).toMatchObject({ state: 'running' });
  });

  it.each([
    [{ Status: 'created' }, undefined, { state: 'created' }],
    [{ Status: 'restarting' }, undefined, { state: 'created' }],
    [
      { Status: 'exited', ExitCode: 3 },
      'workspace-test: WORKSPACE_TEST_FAIL=1, exiting with code 3',
      {
        state: 'exited',
        reason:
          'The container exited with code 3: workspace-test: WORKSPACE_TEST_FAIL=1, exiting with code 3',
      },
    ],
    [
      { Status: 'exited', ExitCode: 0 },
      undefined,
      { state: 'exited', reason: 'The container exited with code 0' },
    ],
    [
      { Status: 'exited', ExitCode: 137 },
      undefined,
      { state: 'exited', reason: 'The container was killed (exit code 137)' },
    ],
    [
      { Status: 'exited', ExitCode: 137, OOMKilled: true },
      undefined,
      { state: 'exited', reason: 'The container ran out of memory (its limit of 512 MB) and was killed' },
    ],
    [
      { Status: 'created', ExitCode: 127, Error: 'exec: "/nope": stat /nope: no such file or directory' },
      undefined,
      {
        state: 'exited',
        reason: 'The container could not start: exec: "/nope": stat /nope: no such file or directory',
      },
    ],
    [
      { Status: 'dead' },
      undefined,
      { state: 'exited', reason: 'The container is dead (the engine failed to stop or remove it)' },
    ],
    [{ Status: 'removing' }, undefined, { state: 'exited', reason: 'The container is being removed' }],
  ])('%j (last output %s) → %j', (state, lastOutput, status) => {
    expect(
      statusFromInspect({ State: state, HostConfig: { Memory: 512 * 2 ** 20 } }, undefined, lastOutput),
    ).toEqual(status);
  });

  it("a container's log, multiplexed (no TTY) or raw", () => {
    const frame = (stream: number, text: string) => {
      const payload = Buffer.from(text);
      const header = Buffer.alloc(8);
      header[0] = stream;
      header.writeUInt32BE(payload.length, 4);
      return Buffer.concat([header, payload]);
    };
    expect(demuxLogs(Buffer.concat([frame(1, 'listening\n'), frame(2, 'fatal: no display\n')]))).toBe(
      'listening\nfatal: no display\n',
    );
    expect(demuxLogs(Buffer.from('plain text\n'))).toBe('plain text\n');
    expect(demuxLogs(Buffer.alloc(0))).toBe('');
  });
});

describe('the container a session gets', () => {
  const spec: SessionContainerSpec = {
    sessionId: 'a'.repeat(32),
    userId: 'b'.repeat(32),
    image: 'kasmweb/chrome:1.16.0',
    registry: 'https://index.docker.io/v1/',
    hostname: 'kasm',
    env: { KASM_TEST_MESSAGE: 'hi', 'BAD=NAME': 'x', NUL: 'a\0b', EMPTY: '' },
    shmSizeBytes: 512 * 2 ** 20,
    cores: 1.5,
    memoryBytes: 2768 * 2 ** 20,
    capAdd: ['NET_ADMIN', 'cap_sys_admin', 'AUDIT_WRITE'],
    webPort: 6901,
  };

  it('drops every capability and adds back only those allowed, never privileged, nothing of the host', async () => {
    const engine = new DockerEngine({
      dockerHost: 'tcp://127.0.0.1:1',
      network: 'sessions',
      allowedCapabilities: ['SYS_ADMIN', 'AUDIT_WRITE'],
      scope: 'prod-1',
    });
    try {
      expect(engine.provider).toBe('docker');
      expect(engine.hostname).toBe('127.0.0.1');
      expect(engine.createBody(spec, 'kasmweb/chrome:1.16.0')).toEqual({
        Image: 'kasmweb/chrome:1.16.0',
        Hostname: 'kasm',
        Env: ['KASM_TEST_MESSAGE=hi', 'EMPTY='],
        Labels: {
          [SESSION_LABELS.managed]: 'true',
          [SESSION_LABELS.session]: spec.sessionId,
          [SESSION_LABELS.user]: spec.userId,
          [WEB_PORT_LABEL]: '6901',
          [SCOPE_LABEL]: 'prod-1',
        },
        AttachStdin: false,
        AttachStdout: false,
        AttachStderr: false,
        Tty: false,
        OpenStdin: false,
        HostConfig: {
          CapDrop: ['ALL'],
          CapAdd: ['SYS_ADMIN', 'AUDIT_WRITE'],
          Privileged: false,
          ReadonlyRootfs: false,
          SecurityOpt: ['no-new-privileges'],
          NetworkMode: 'sessions',
          PidsLimit: 4096,
          LogConfig: { Type: 'json-file', Config: { 'max-size': '10m', 'max-file': '3' } },
          ShmSize: 512 * 2 ** 20,
          NanoCpus: 1.5e9,
          Memory: 2768 * 2 ** 20,
        },
      });
    } finally {
      await engine.close();
    }
  });

  it('no limits asked, none set (0 means none); the default bridge; no capability allowed, none added', async () => {
    const engine = new DockerEngine({ dockerHost: 'tcp://127.0.0.1:1' });
    try {
      const body = engine.createBody(
        { ...spec, hostname: undefined, cores: 0, memoryBytes: undefined, shmSizeBytes: undefined },
        'x:1',
      );
      expect(body.Hostname).toBeUndefined();
      expect(body.HostConfig).toEqual({
        CapDrop: ['ALL'],
        CapAdd: [],
        Privileged: false,
        ReadonlyRootfs: false,
        SecurityOpt: ['no-new-privileges'],
        NetworkMode: 'bridge',
        PidsLimit: 4096,
        LogConfig: { Type: 'json-file', Config: { 'max-size': '10m', 'max-file': '3' } },
      });
      expect(body.Labels).not.toHaveProperty(SCOPE_LABEL);
    } finally {
      await engine.close();
    }
  });

  it('an id that is not a container reference is answered without asking the engine', async () => {
    const engine = new DockerEngine({ dockerHost: 'tcp://127.0.0.1:1' });
    try {
      expect(await engine.status('../images/x')).toEqual({ state: 'missing' });
      await expect(engine.remove('')).resolves.toBeUndefined();
      await expect(engine.exec('a/b', { cmd: 'true' })).rejects.toThrow('No such container: a/b');
    } finally {
      await engine.close();
    }
  });
});
