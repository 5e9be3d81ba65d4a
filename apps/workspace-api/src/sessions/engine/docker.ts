import { Agent } from 'node:http';
import { hostname as osHostname } from 'node:os';
import Docker from 'dockerode';
import {
  EngineError,
  SESSION_LABELS,
  type ContainerStatus,
  type SessionContainer,
  type SessionContainerSpec,
  type SessionEngine,
  type StartProgress,
} from '../engine';

/**
 * The session engine on a Docker Engine (20.10 and later), through dockerode: one container per
 * session on one host, reached by its IP address on the configured network (no published port).
 *
 * Every container is made the same way: every capability dropped and only those both asked by the
 * image entry and allowed by the operator added back, never privileged, `no-new-privileges`, no bind
 * mount, volume or tmpfs of the host, the entry's CPU, memory and /dev/shm limits. It is named
 * `workspace-session-<session id>` (so a session can never have two) and carries SESSION_LABELS, the
 * web port (WEB_PORT_LABEL: status() reads the port back from it) and, when set, the scope.
 *
 * Failures are EngineErrors: `unavailable` when the engine could not be reached or did not answer
 * within `requestTimeoutMs`, a refusal carrying Docker's own words otherwise. A create that timed out
 * may still happen on the engine after this driver has tried to remove it: such a labelled container
 * without a session is what the reconciler (through list()) removes.
 */

/** The label holding the container's web port (status() answers `{host: <its IP>, port: <this>}`). */
export const WEB_PORT_LABEL = 'platform.workspace.web-port';
/**
 * The label that keeps apart the session containers of services sharing one engine (two deployments,
 * or parallel test files each with its own schema): list() sees only its own scope's.
 */
export const SCOPE_LABEL = 'platform.workspace.scope';
/** Kasm's web port, assumed for a container whose web-port label is missing or unreadable. */
const DEFAULT_WEB_PORT = 6901;

export type PullPolicy = 'if-missing' | 'always' | 'never';

export interface DockerEngineOptions {
  /**
   * Where the engine listens, as Docker's clients read DOCKER_HOST: `unix:///var/run/docker.sock` or
   * `tcp://host:2375` (plain HTTP; TLS and ssh:// are not supported). Unset: dockerode's default
   * (the DOCKER_HOST of the process, else /var/run/docker.sock).
   */
  dockerHost?: string;
  /**
   * The network session containers join (it must exist; the service must be able to reach the
   * containers' addresses on it, e.g. by being attached to it too). Unset: Docker's default bridge.
   */
  network?: string;
  /**
   * When to pull a session's image: when it is not on the engine (default); at every start (the
   * image already there still serves when the pull fails); or never (a missing image is an error).
   */
  pull?: PullPolicy;
  /**
   * Capabilities an image entry's `run_config.cap_add` may add back (e.g. `SYS_ADMIN`, with or
   * without `CAP_`); anything else is dropped. Default: none. `ALL` is refused.
   */
  allowedCapabilities?: string[];
  /** The bound on each Engine API call (default 10 s); past it the engine counts as unavailable. */
  requestTimeoutMs?: number;
  /** The bound on one image pull, download and extraction included (default 10 min). */
  pullTimeoutMs?: number;
  /** Reported as `server.hostname`; default: the TCP host of `dockerHost`, else this machine's name. */
  hostname?: string;
  /** Set as SCOPE_LABEL on every container and required of those list() returns (see SCOPE_LABEL). */
  scope?: string;
  /**
   * How many container changes (a start's create + start, a removal's stop + remove) this engine has
   * in flight at once; the others wait their turn (default 4). The engine does them one after the
   * other anyway: sent all at once, 100 creates on 2 cores each took over 10 s, and all timed out.
   */
  maxConcurrentChanges?: number;
}

/** How dockerode reaches the engine (what `dockerHost` says). */
export type DockerConnection = { socketPath: string } | { host: string; port: number; protocol: 'http' };

/**
 * DOCKER_HOST as Docker's clients read it: `unix://<absolute path>` or `tcp://<host>[:<port>]` (port
 * 2375, Docker's plain-HTTP port, when left out; IPv6 hosts in brackets). Throws for anything else.
 */
export function parseDockerHost(value: string): DockerConnection {
  const text = value.trim();
  const expected = 'expected unix:///path/to/docker.sock or tcp://host:port';
  if (text.startsWith('unix://')) {
    const socketPath = text.slice('unix://'.length);
    if (!socketPath.startsWith('/')) throw new Error(`DOCKER_HOST ${value}: no socket path (${expected})`);
    return { socketPath };
  }
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(text)?.[1]?.toLowerCase();
  if (scheme !== 'tcp') {
    const what = scheme ? `the ${scheme}:// scheme is not supported` : 'no scheme';
    throw new Error(`DOCKER_HOST ${value}: ${what} (${expected})`);
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error(`DOCKER_HOST ${value}: not an address (${expected})`);
  }
  if (!url.hostname || (url.pathname !== '' && url.pathname !== '/') || url.search || url.username)
    throw new Error(`DOCKER_HOST ${value}: only a host and a port may follow tcp:// (${expected})`);
  return {
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port ? Number(url.port) : 2375,
    protocol: 'http',
  };
}

/** Registries that mean Docker Hub, where a bare image name is pulled from anyway. */
const DOCKER_HUB = new Set([
  'docker.io',
  'index.docker.io',
  'registry-1.docker.io',
  'registry.hub.docker.com',
  'hub.docker.com',
]);

/** Docker's rule: a first path component with a dot or a colon, or `localhost`, is a registry host. */
const namesRegistry = (name: string) => {
  const slash = name.indexOf('/');
  if (slash < 0) return false;
  const first = name.slice(0, slash);
  return first.includes('.') || first.includes(':') || first === 'localhost';
};

/**
 * The image reference to use for a registry entry's `name` and `docker_registry`.
 *
 * Kasm's `docker_registry` is the key of the registry's credentials (as in Docker's config.json:
 * `https://index.docker.io/v1/` for Docker Hub), not part of the image's name: Kasm's images name
 * their registry themselves (`kasmweb/chrome:1.16.0` on Docker Hub, `ghcr.io/owner/image:tag`
 * elsewhere). So: a name that already names a registry host is used as it is; so is any name when the
 * registry is unset or Docker Hub; otherwise the registry URL's host (and port) is put in front
 * (`https://registry.example.com:5000/v2/` + `team/desktop:1` → `registry.example.com:5000/team/desktop:1`).
 * The URL's path is an API version or a credentials key, never a repository namespace, and is left out.
 */
export function imageReference(name: string, registry?: string | null): string {
  const text = registry?.trim();
  if (!text || namesRegistry(name)) return name;
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `https://${text}`;
  let host: string;
  try {
    host = new URL(withScheme).host;
  } catch {
    throw new EngineError(`The image's docker_registry (${text}) is not a registry address`);
  }
  if (!host) throw new EngineError(`The image's docker_registry (${text}) is not a registry address`);
  return DOCKER_HUB.has(host) ? name : `${host}/${name}`;
}

/**
 * A reference split the way the Engine API's pull wants it (`fromImage` and `tag`): an empty tag would
 * pull every tag of the repository, so a reference without one gets `latest`, as `docker pull` does.
 */
export function splitReference(reference: string): { repository: string; tag: string } {
  const at = reference.indexOf('@');
  if (at >= 0) return { repository: reference.slice(0, at), tag: reference.slice(at + 1) };
  const colon = reference.lastIndexOf(':');
  if (colon > reference.lastIndexOf('/'))
    return { repository: reference.slice(0, colon), tag: reference.slice(colon + 1) };
  return { repository: reference, tag: 'latest' };
}

/** `cap_sys_admin`, `CAP_SYS_ADMIN` and `SYS_ADMIN` are one capability, Docker's `SYS_ADMIN`. */
export const normalizeCapability = (name: string) => name.trim().toUpperCase().replace(/^CAP_/, '');

/** Docker's rule for network names; `host`, `none` and `container:<id>` would not isolate a session. */
const NETWORK_NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;
/** A container id or name as the Engine API takes it in a path (nothing that could change the path). */
const CONTAINER_REF = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;

export interface ResolvedDockerEngineOptions {
  connection?: DockerConnection;
  network?: string;
  pull: PullPolicy;
  allowedCapabilities: string[];
  requestTimeoutMs: number;
  pullTimeoutMs: number;
  hostname: string;
  scope?: string;
  maxConcurrentChanges: number;
}

/** The options checked and defaulted; throws one error naming every problem. */
export function resolveDockerEngineOptions(options: DockerEngineOptions = {}): ResolvedDockerEngineOptions {
  const problems: string[] = [];
  let connection: DockerConnection | undefined;
  if (options.dockerHost !== undefined && options.dockerHost.trim() !== '') {
    try {
      connection = parseDockerHost(options.dockerHost);
    } catch (error) {
      problems.push((error as Error).message);
    }
  }
  const network = options.network?.trim() || undefined;
  if (network !== undefined && (!NETWORK_NAME.test(network) || network === 'host' || network === 'none'))
    problems.push(`network ${network}: a network name other than host and none`);
  const pull = options.pull ?? 'if-missing';
  if (!['if-missing', 'always', 'never'].includes(pull))
    problems.push(`pull ${String(pull)}: one of if-missing, always, never`);
  const allowedCapabilities = (options.allowedCapabilities ?? []).map(normalizeCapability);
  for (const cap of allowedCapabilities) {
    if (cap === 'ALL')
      problems.push('allowedCapabilities: ALL is refused (it would amount to a privileged container)');
    else if (!/^[A-Z][A-Z0-9_]*$/.test(cap))
      problems.push(`allowedCapabilities: ${cap} is not a capability name`);
  }
  const positive = (name: string, value: number | undefined, fallback: number) => {
    if (value === undefined) return fallback;
    if (!Number.isInteger(value) || value <= 0)
      problems.push(`${name} ${value}: a positive whole number of ms`);
    return value;
  };
  const requestTimeoutMs = positive('requestTimeoutMs', options.requestTimeoutMs, 10_000);
  const pullTimeoutMs = positive('pullTimeoutMs', options.pullTimeoutMs, 10 * 60_000);
  const maxConcurrentChanges = options.maxConcurrentChanges ?? 4;
  if (!Number.isInteger(maxConcurrentChanges) || maxConcurrentChanges < 1)
    problems.push(`maxConcurrentChanges ${maxConcurrentChanges}: a whole number from 1`);
  const scope = options.scope?.trim() || undefined;
  if (scope !== undefined && !/^[\w.:-]{1,128}$/.test(scope))
    problems.push(`scope ${scope}: letters, digits, _ . : - (at most 128)`);
  if (problems.length) throw new Error(`invalid Docker engine options:\n  ${problems.join('\n  ')}`);
  return {
    connection,
    network,
    pull,
    allowedCapabilities: [...new Set(allowedCapabilities)],
    requestTimeoutMs,
    pullTimeoutMs,
    hostname:
      options.hostname?.trim() || (connection && 'host' in connection ? connection.host : osHostname()),
    scope,
    maxConcurrentChanges,
  };
}

/** One event of the Engine API's pull stream (`POST /images/create`). */
export interface PullEvent {
  status?: string;
  id?: string;
  progressDetail?: { current?: number; total?: number };
  error?: string;
  errorDetail?: { message?: string };
}

/**
 * A pull's progress from its stream of events, 0–100: each layer to fetch counts the same (sizes are
 * known only once a layer starts downloading), its download 80 % of it and its extraction 20 %. Layers
 * the engine already has (`Already exists`) are no work and do not count. Docker announces every layer
 * before downloading any, and the figure never goes back all the same.
 */
export class PullProgress {
  private readonly layers = new Map<string, number>();
  private highest = 0;

  /** Takes one event; the whole pull's percentage after it. */
  update(event: PullEvent): number {
    const id = event.id;
    const status = event.status ?? '';
    if (id) {
      const detail = event.progressDetail;
      const part = detail?.total ? Math.min(1, Math.max(0, (detail.current ?? 0) / detail.total)) : 0;
      let done: number | undefined;
      if (status === 'Pulling fs layer' || status === 'Waiting') done = 0;
      else if (status === 'Downloading') done = 0.8 * part;
      else if (status === 'Verifying Checksum' || status === 'Download complete') done = 0.8;
      else if (status === 'Extracting') done = 0.8 + 0.2 * part;
      else if (status === 'Pull complete') done = 1;
      // `Already exists` is no work; other statuses (`Pulling from <repository>` names the tag as its
      // id, `Retrying in 5 seconds`) are not a layer's progress.
      if (done !== undefined) this.layers.set(id, Math.max(this.layers.get(id) ?? 0, done));
    }
    if (this.layers.size) {
      let sum = 0;
      for (const done of this.layers.values()) sum += done;
      this.highest = Math.max(this.highest, Math.floor((100 * sum) / this.layers.size));
    }
    return this.highest;
  }
}

/** The part of `GET /containers/{id}/json` status() reads. */
export interface InspectedContainer {
  Config?: { Labels?: Record<string, string> | null };
  HostConfig?: { Memory?: number };
  State?: {
    Status?: string;
    Running?: boolean;
    Paused?: boolean;
    OOMKilled?: boolean;
    Dead?: boolean;
    ExitCode?: number;
    Error?: string;
  };
  NetworkSettings?: {
    IPAddress?: string;
    Networks?: Record<string, { IPAddress?: string } | undefined> | null;
  };
}

/**
 * What Docker's inspect says, as a ContainerStatus (`lastOutput`: the container's last line of
 * output, added to the reason of one that exited). A paused container still counts as running (it
 * holds its address and resumes); a restarting one as created.
 */
export function statusFromInspect(
  info: InspectedContainer,
  network: string | undefined,
  lastOutput?: string,
): ContainerStatus {
  const state = info.State ?? {};
  const withOutput = (reason: string) => (lastOutput ? `${reason}: ${lastOutput}` : reason);
  if (state.Running) {
    const networks = info.NetworkSettings?.Networks ?? {};
    const host = network
      ? networks[network]?.IPAddress
      : info.NetworkSettings?.IPAddress || networks.bridge?.IPAddress;
    const label = Number(info.Config?.Labels?.[WEB_PORT_LABEL]);
    const port = Number.isInteger(label) && label > 0 && label < 65536 ? label : DEFAULT_WEB_PORT;
    // Running without an address on the network (being attached, or detached by someone): not reachable yet.
    if (!host) return { state: 'created' };
    return { state: 'running', address: { host, port } };
  }
  if (state.OOMKilled) {
    const limit = info.HostConfig?.Memory ? ` of ${Math.round(info.HostConfig.Memory / 2 ** 20)} MB` : '';
    return { state: 'exited', reason: `The container ran out of memory (its limit${limit}) and was killed` };
  }
  if (state.Error) return { state: 'exited', reason: `The container could not start: ${state.Error}` };
  switch (state.Status) {
    case 'created':
    case 'restarting':
      return { state: 'created' };
    case 'removing':
      return { state: 'exited', reason: 'The container is being removed' };
    case 'dead':
      return { state: 'exited', reason: 'The container is dead (the engine failed to stop or remove it)' };
    default:
      return {
        state: 'exited',
        reason: withOutput(
          state.ExitCode === 137
            ? 'The container was killed (exit code 137)'
            : `The container exited with code ${state.ExitCode ?? 'unknown'}`,
        ),
      };
  }
}

/** The text of a non-TTY container's log (Docker multiplexes stdout and stderr in 8-byte-headed frames). */
export function demuxLogs(buffer: Buffer): string {
  const parts: Buffer[] = [];
  let offset = 0;
  while (offset + 8 <= buffer.length && buffer[offset] <= 2 && buffer.readUIntBE(offset + 1, 3) === 0) {
    const size = buffer.readUInt32BE(offset + 4);
    parts.push(buffer.subarray(offset + 8, offset + 8 + size));
    offset += 8 + size;
  }
  return offset === 0 ? buffer.toString('utf8') : Buffer.concat(parts).toString('utf8');
}

/** Network errors that mean the engine could not be reached (a retry may help). */
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOENT',
  'EACCES',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ECONNABORTED',
  'ERR_SOCKET_CONNECTION_TIMEOUT',
]);

/** An EngineError that still knows the Engine API's status code (404 and 409 are expected at places). */
class DockerCallError extends EngineError {
  constructor(
    message: string,
    unavailable: boolean,
    readonly statusCode?: number,
  ) {
    super(message, unavailable);
  }
}

const statusOf = (error: unknown) => (error instanceof DockerCallError ? error.statusCode : undefined);

/** Docker's own words from a dockerode error (`(HTTP code 404) no such container - No such …` → `No such …`). */
function dockerMessage(error: unknown): string {
  const e = error as { json?: unknown; message?: string };
  const json = e.json as { message?: unknown } | undefined;
  if (json && typeof json === 'object' && typeof json.message === 'string') return json.message.trim();
  return String(e.message ?? error)
    .replace(/^\(HTTP code \d+\) [^-]*- /, '')
    .trim();
}

/** The last non-empty line of a text, at most 200 characters. */
const lastLine = (text: string) => {
  const line = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean)
    .pop();
  return line && line.length > 200 ? `${line.slice(0, 199)}…` : line;
};

/**
 * At most `max` tasks at once, the others in line (first come, first served); a waiting task leaves
 * the line when its signal aborts. A finishing task hands its slot straight to the next in line.
 */
export class Limiter {
  private active = 0;
  private readonly line: (() => void)[] = [];

  constructor(private readonly max: number) {}

  /** Tasks waiting for a slot now. */
  get waiting() {
    return this.line.length;
  }

  /** How many tasks a task run now would wait behind (0: it would run at once). */
  get ahead() {
    return this.active < this.max ? 0 : this.active + this.line.length;
  }

  async run<T>(task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (this.active < this.max) this.active++;
    else {
      signal?.throwIfAborted();
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => {
          this.line.splice(this.line.indexOf(take), 1);
          reject(signal?.reason);
        };
        const take = () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        this.line.push(take);
      });
    }
    try {
      return await task();
    } finally {
      const next = this.line.shift();
      if (next) next();
      else this.active--;
    }
  }
}

interface SharedPull {
  done: Promise<void>;
  listeners: Set<(percent: number) => void>;
}

/** Processes a session container may run at once (a desktop runs a few hundred). */
export const SESSION_PIDS_LIMIT = 4096;

export class DockerEngine implements SessionEngine {
  readonly provider = 'docker';
  readonly hostname: string;
  readonly options: ResolvedDockerEngineOptions;
  private readonly docker: Docker;
  private readonly agent = new Agent({ keepAlive: true });
  /** Where the engine is, for messages. */
  private readonly endpoint: string;
  /** Pulls under way, by reference: concurrent starts of one missing image share one pull. */
  private readonly pulls = new Map<string, SharedPull>();
  /** Creates, starts, stops and removals in flight (see `maxConcurrentChanges`). */
  private readonly changes: Limiter;

  constructor(options: DockerEngineOptions = {}) {
    this.options = resolveDockerEngineOptions(options);
    this.hostname = this.options.hostname;
    this.changes = new Limiter(this.options.maxConcurrentChanges);
    const connection = this.options.connection;
    this.endpoint = options.dockerHost?.trim() || 'the default socket';
    // Explicit undefineds: dockerode merges its defaults from the process's DOCKER_HOST, DOCKER_TLS_VERIFY
    // and DOCKER_CERT_PATH under these options, and an explicit dockerHost must win over all of them.
    // docker-modem takes an http.Agent (keep-alive connections, closed by close()); its types omit it.
    const modemOptions: Docker.DockerOptions & { agent: Agent } = {
      ...(connection && 'socketPath' in connection
        ? { socketPath: connection.socketPath, host: undefined, port: undefined, protocol: 'http' }
        : connection
          ? {
              host: connection.host,
              port: connection.port,
              protocol: connection.protocol,
              socketPath: undefined,
            }
          : {}),
      ...(connection ? { ca: undefined, cert: undefined, key: undefined } : {}),
      agent: this.agent,
    };
    this.docker = new Docker(modemOptions);
  }

  async start(
    spec: SessionContainerSpec,
    options: { signal?: AbortSignal; onProgress?: (progress: StartProgress) => void } = {},
  ): Promise<{ containerId: string }> {
    const { signal, onProgress } = options;
    const report = (message: string, percent: number) => {
      try {
        onProgress?.({ message, percent });
      } catch {
        // A listener's failure is not the start's.
      }
    };
    const reference = imageReference(spec.image, spec.registry);
    report(`Looking for image ${reference}`, 0);
    await this.ensureImage(reference, signal, (percent) =>
      report(`Pulling image ${reference} (${percent} %)`, 5 + Math.round(0.75 * percent)),
    );

    const ahead = this.changes.ahead;
    if (ahead) report(`Waiting for the engine (${ahead} ahead)`, 82);
    let containerId: string;
    try {
      containerId = await this.changes.run(
        () => this.createAndStart(spec, reference, report, signal),
        signal,
      );
    } catch (error) {
      if (error instanceof EngineError) throw error;
      throw new EngineError('Cancelled: waiting for the engine'); // left the line on the signal
    }
    report('Container started', 100);
    return { containerId };
  }

  /** Create, then start; what was created is removed when the start fails. Holds one change slot. */
  private async createAndStart(
    spec: SessionContainerSpec,
    reference: string,
    report: (message: string, percent: number) => void,
    signal: AbortSignal | undefined,
  ): Promise<string> {
    report('Creating the container', 85);
    const name = `workspace-session-${spec.sessionId}`;
    let containerId: string;
    try {
      const container = await this.call(
        'create the container',
        (abortSignal) =>
          this.docker.createContainer({ ...this.createBody(spec, reference), name, abortSignal }),
        { signal },
      );
      containerId = container.id;
    } catch (error) {
      // A create that timed out or was cancelled may still have happened: remove what has this session's
      // name. Not on a conflict (409): that container is another start's of the same session.
      if (statusOf(error) !== 409) await this.removeQuietly(name);
      throw error;
    }

    try {
      report('Starting the container', 92);
      await this.call(
        'start the container',
        (abortSignal) => this.docker.getContainer(containerId).start({ abortSignal }),
        { signal },
      );
    } catch (error) {
      await this.removeQuietly(containerId);
      throw error;
    }
    return containerId;
  }

  /** The Engine API's create body for a session (without its name). */
  createBody(spec: SessionContainerSpec, reference: string): Docker.ContainerCreateOptions {
    const allowed = new Set(this.options.allowedCapabilities);
    const capAdd = [...new Set(spec.capAdd.map(normalizeCapability))].filter((cap) => allowed.has(cap));
    const positive = (n: number | undefined) =>
      n !== undefined && Number.isFinite(n) && n > 0 ? n : undefined;
    const cores = positive(spec.cores);
    const memory = positive(spec.memoryBytes);
    const shm = positive(spec.shmSizeBytes);
    const labels: Record<string, string> = {
      [SESSION_LABELS.managed]: 'true',
      [SESSION_LABELS.session]: spec.sessionId,
      [SESSION_LABELS.user]: spec.userId,
      [WEB_PORT_LABEL]: String(spec.webPort),
    };
    if (this.options.scope) labels[SCOPE_LABEL] = this.options.scope;
    return {
      Image: reference,
      ...(spec.hostname ? { Hostname: spec.hostname } : {}),
      // A name with `=` or NUL, or a value with NUL, cannot be passed as `NAME=value`: left out.
      Env: Object.entries(spec.env)
        .filter(([key, value]) => /^[^=\0]+$/.test(key) && !value.includes('\0'))
        .map(([key, value]) => `${key}=${value}`),
      Labels: labels,
      AttachStdin: false,
      AttachStdout: false,
      AttachStderr: false,
      Tty: false,
      OpenStdin: false,
      HostConfig: {
        CapDrop: ['ALL'],
        CapAdd: capAdd,
        Privileged: false,
        ReadonlyRootfs: false,
        SecurityOpt: ['no-new-privileges'],
        NetworkMode: this.options.network ?? 'bridge',
        // Bounded whatever runs inside: processes (a fork bomb stops there, not at the host's limit)
        // and the engine's log of the container (rotated at 10 MB, three files).
        PidsLimit: SESSION_PIDS_LIMIT,
        LogConfig: { Type: 'json-file', Config: { 'max-size': '10m', 'max-file': '3' } },
        ...(shm ? { ShmSize: Math.round(shm) } : {}),
        ...(cores ? { NanoCpus: Math.round(cores * 1e9) } : {}),
        ...(memory ? { Memory: Math.round(memory) } : {}),
        // Never a host path, volume or tmpfs, whatever an image entry says: none is ever named here.
      },
    };
  }

  async status(containerId: string): Promise<ContainerStatus> {
    if (!CONTAINER_REF.test(containerId)) return { state: 'missing' };
    const container = this.docker.getContainer(containerId);
    let info: InspectedContainer;
    try {
      info = (await this.call('inspect the container', (abortSignal) =>
        container.inspect({ abortSignal }),
      )) as InspectedContainer;
    } catch (error) {
      if (statusOf(error) === 404) return { state: 'missing' };
      throw error;
    }
    const status = statusFromInspect(info, this.options.network);
    if (status.state !== 'exited' || info.State?.Status !== 'exited' || info.State.OOMKilled) return status;
    // Why it exited is usually its last words: the end of its output goes into the reason.
    const output = await this.call('read the container log', async (abortSignal) =>
      demuxLogs(
        (await container.logs({ stdout: true, stderr: true, follow: false, tail: 5, abortSignal })) as Buffer,
      ),
    ).catch(() => '');
    return statusFromInspect(info, this.options.network, lastLine(output));
  }

  async exec(
    containerId: string,
    command: { cmd: string; user?: string; env?: Record<string, string> },
  ): Promise<void> {
    if (!CONTAINER_REF.test(containerId)) throw new EngineError(`No such container: ${containerId}`);
    const exec = await this.call('run the command', (abortSignal) =>
      this.docker.getContainer(containerId).exec({
        Cmd: ['sh', '-c', command.cmd],
        ...(command.user ? { User: command.user } : {}),
        ...(command.env ? { Env: Object.entries(command.env).map(([k, v]) => `${k}=${v}`) } : {}),
        AttachStdin: false,
        AttachStdout: false,
        AttachStderr: false,
        Tty: false,
        abortSignal,
      }),
    );
    // Detached: Docker answers once the process is started, with an empty body to drain.
    const response = await this.call('run the command', (abortSignal) =>
      exec.start({ Detach: true, abortSignal }),
    );
    (response as NodeJS.ReadableStream | undefined)?.resume?.();
  }

  async remove(containerId: string): Promise<void> {
    if (!CONTAINER_REF.test(containerId)) return;
    await this.changes.run(() => this.removeNow(containerId));
  }

  /** stop + remove, without waiting for a change slot (a failed start holds one already). */
  private async removeNow(containerId: string): Promise<void> {
    const container = this.docker.getContainer(containerId);
    try {
      // SIGTERM, then SIGKILL 2 s later: a session's state is not kept anyway.
      await this.call('stop the container', (abortSignal) => container.stop({ t: 2, abortSignal }));
    } catch (error) {
      const status = statusOf(error);
      if (status === 404) return;
      // 304 (already stopped), 409 (paused…) and the like: the forced removal below kills it anyway.
      if (error instanceof EngineError && error.unavailable) throw error;
    }
    try {
      await this.call('remove the container', (abortSignal) =>
        container.remove({ force: true, v: true, abortSignal }),
      );
    } catch (error) {
      const status = statusOf(error);
      if (status === 404) return;
      if (status !== 409) throw error; // 409: a removal already under way; wait for it below
    }
    const deadline = Date.now() + this.options.requestTimeoutMs;
    while ((await this.status(containerId)).state !== 'missing') {
      if (Date.now() > deadline)
        throw new EngineError(
          `The container ${containerId} is still there ${this.options.requestTimeoutMs / 1000} s after its removal`,
        );
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  async list(): Promise<SessionContainer[]> {
    const label: string[] = [SESSION_LABELS.managed];
    if (this.options.scope) label.push(`${SCOPE_LABEL}=${this.options.scope}`);
    const containers = await this.call('list the session containers', (abortSignal) =>
      this.docker.listContainers({ all: true, filters: { label }, abortSignal }),
    );
    return containers.map((c) => ({
      containerId: c.Id,
      sessionId: c.Labels?.[SESSION_LABELS.session] ?? '',
      userId: c.Labels?.[SESSION_LABELS.user] ?? '',
      running: c.State === 'running',
    }));
  }

  async close(): Promise<void> {
    this.agent.destroy();
  }

  /** The image present on the engine when the policy allows, pulled otherwise; `onPercent` told along the pull. */
  private async ensureImage(
    reference: string,
    signal: AbortSignal | undefined,
    onPercent: (percent: number) => void,
  ) {
    const present = await this.imagePresent(reference, signal);
    if (present && this.options.pull !== 'always') return;
    if (!present && this.options.pull === 'never')
      throw new EngineError(`Image ${reference} is not present on the engine`);
    try {
      await this.sharedPull(reference, signal, onPercent);
    } catch (error) {
      // `always` with the registry out of reach: the image already here still serves.
      if (present && error instanceof EngineError && !signal?.aborted) return;
      throw error;
    }
  }

  private async imagePresent(reference: string, signal?: AbortSignal): Promise<boolean> {
    try {
      await this.call('look for the image', () => this.docker.getImage(reference).inspect(), { signal });
      return true;
    } catch (error) {
      if (statusOf(error) === 404) return false;
      throw error;
    }
  }

  /** One pull per reference at a time; each caller waits for it (or for its own signal) and hears its progress. */
  private async sharedPull(
    reference: string,
    signal: AbortSignal | undefined,
    onPercent: (percent: number) => void,
  ) {
    let pull = this.pulls.get(reference);
    if (!pull) {
      const listeners = new Set<(percent: number) => void>();
      const done = this.pull(reference, (percent) =>
        listeners.forEach((listener) => listener(percent)),
      ).finally(() => this.pulls.delete(reference));
      pull = { done, listeners };
      this.pulls.set(reference, pull);
    }
    pull.listeners.add(onPercent);
    try {
      if (!signal) return await pull.done;
      signal.throwIfAborted();
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => reject(new EngineError(`Cancelled: pull ${reference}`));
        signal.addEventListener('abort', onAbort, { once: true });
        pull.done.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
      });
    } catch (error) {
      if (signal?.aborted && !(error instanceof EngineError))
        throw new EngineError(`Cancelled: pull ${reference}`);
      throw error;
    } finally {
      pull.listeners.delete(onPercent);
    }
  }

  /** `POST /images/create`, its event stream followed to the end; bounded by `pullTimeoutMs`. */
  private pull(reference: string, onPercent: (percent: number) => void): Promise<void> {
    const { repository, tag } = splitReference(reference);
    const progress = new PullProgress();
    let reported = -1;
    return this.call(
      `pull image ${reference}`,
      async (abortSignal) => {
        const stream = await this.docker.createImage({ fromImage: repository, tag, abortSignal });
        await new Promise<void>((resolve, reject) => {
          let failure: string | undefined;
          this.docker.modem.followProgress(
            stream,
            (error: Error | null) =>
              error ? reject(error) : failure ? reject(new Error(failure)) : resolve(),
            (event: PullEvent) => {
              if (event.error) failure = event.errorDetail?.message ?? event.error;
              const percent = progress.update(event);
              if (percent !== reported) onPercent((reported = percent));
            },
          );
        });
      },
      { timeoutMs: this.options.pullTimeoutMs },
    );
  }

  /** Removes a container, ignoring every failure (used on the way out of a failed start). */
  private async removeQuietly(containerId: string) {
    if (CONTAINER_REF.test(containerId)) await this.removeNow(containerId).catch(() => undefined);
  }

  /**
   * One Engine API call, bounded by `timeoutMs` (default: `requestTimeoutMs`) and cancelled by
   * `signal`; failures become EngineErrors: unavailable when the engine could not be reached or did
   * not answer in time, a refusal with Docker's own message otherwise.
   */
  private async call<T>(
    what: string,
    run: (signal: AbortSignal) => Promise<T>,
    options: { signal?: AbortSignal; timeoutMs?: number } = {},
  ): Promise<T> {
    const timeoutMs = options.timeoutMs ?? this.options.requestTimeoutMs;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
    let onAbort: (() => void) | undefined;
    try {
      signal.throwIfAborted();
      const pending = run(signal);
      pending.catch(() => undefined); // settled after a lost race: not an unhandled rejection
      // Not every dockerode call takes the signal (image inspect does not): the race bounds them all.
      const aborted = new Promise<never>((_, reject) => {
        onAbort = () => reject(signal.reason);
        signal.addEventListener('abort', onAbort, { once: true });
      });
      return await Promise.race([pending, aborted]);
    } catch (error) {
      if (options.signal?.aborted) throw new DockerCallError(`Cancelled: ${what}`, false);
      if (timeout.aborted)
        throw new DockerCallError(
          `The Docker engine (${this.endpoint}) did not ${what} within ${timeoutMs / 1000} s`,
          true,
        );
      const code = (error as { code?: string }).code;
      if (code && UNREACHABLE.has(code))
        throw new DockerCallError(
          `The Docker engine (${this.endpoint}) cannot be reached: ${(error as Error).message}`,
          true,
        );
      const statusCode = (error as { statusCode?: number }).statusCode;
      if (statusCode === undefined && !(error instanceof EngineError))
        throw new DockerCallError(`Could not ${what}: ${(error as Error).message ?? String(error)}`, false);
      if (error instanceof EngineError) throw error;
      throw new DockerCallError(`Could not ${what}: ${dockerMessage(error)}`, false, statusCode);
    } finally {
      if (onAbort) signal.removeEventListener('abort', onAbort);
    }
  }
}
