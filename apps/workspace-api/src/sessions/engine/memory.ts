import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  EngineError,
  type ContainerStatus,
  type SessionAddress,
  type SessionContainer,
  type SessionContainerSpec,
  type SessionEngine,
  type StartProgress,
} from '../engine';

/** A container the in-process engine holds. */
export interface MemoryContainer {
  containerId: string;
  spec: SessionContainerSpec;
  /** `undefined` while it runs; the engine's words once it has stopped. */
  exited?: string;
}

/** A command `exec` was asked to run. */
export interface MemoryExec {
  containerId: string;
  cmd: string;
  user?: string;
  env?: Record<string, string>;
}

export interface MemoryEngineOptions {
  /** `server.hostname` of its sessions (default `memory`). */
  hostname?: string;
  /** How long a start takes, told in three progress reports (default 0). */
  startDelayMs?: number;
  /**
   * Where a running container is reached. Default: one small HTTP server of the engine's own on
   * 127.0.0.1 (a random port), which answers every request with 200 "memory workspace", so that
   * what waits for a workspace's web port to answer has something to reach.
   */
  address?: (container: MemoryContainer) => SessionAddress;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(new EngineError('The start was cancelled'));
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new EngineError('The start was cancelled'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/**
 * The session engine without a container engine: containers are entries of a Map, a start resolves
 * after `startDelayMs` with progress reports, and nothing runs. It serves `npm test` (no Docker) and
 * `SESSIONS_ENGINE=memory` for demos; its extra methods let tests make a start fail, hold starts
 * until they say so, and lose or stop a container behind the service's back (what the reconciler
 * repairs). It implements the interface's promises: a failed start leaves no container, a missing
 * container is `missing`, removing one twice is fine.
 */
export class MemoryEngine implements SessionEngine {
  readonly provider = 'memory';
  readonly hostname: string;
  /** Every container made and not removed, by id. */
  readonly containers = new Map<string, MemoryContainer>();
  /** Every command `exec` started, in order. */
  readonly execs: MemoryExec[] = [];
  /** Every `start` asked, in order (its spec), whether it succeeded or not. */
  readonly started: SessionContainerSpec[] = [];
  startDelayMs: number;
  /**
   * false: running containers are reported at an address where nothing listens (a workspace that
   * never opens its web port).
   */
  answering = true;
  private readonly addressOf: (container: MemoryContainer) => SessionAddress;
  private readonly failures: string[] = [];
  private readonly exits: string[] = [];
  private server: Promise<{ server: Server; address: SessionAddress }> | undefined;
  private readonly removeFailures: EngineError[] = [];
  private held: { promise: Promise<void>; release: () => void } | undefined;
  private closed = false;

  constructor(options: MemoryEngineOptions = {}) {
    this.hostname = options.hostname ?? 'memory';
    this.startDelayMs = options.startDelayMs ?? 0;
    this.addressOf = options.address ?? (() => this.webAddress);
  }

  private webAddress: SessionAddress = { host: '127.0.0.1', port: 1 };

  /** The engine's own web server, listening once the first container starts. */
  private listen(): Promise<{ server: Server; address: SessionAddress }> {
    this.server ??= new Promise((resolve, reject) => {
      const server = createServer((_request, response) => {
        response.writeHead(200, { 'content-type': 'text/plain' }).end('memory workspace');
      });
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const { port } = server.address() as AddressInfo;
        this.webAddress = { host: '127.0.0.1', port };
        resolve({ server, address: this.webAddress });
      });
    });
    return this.server;
  }

  /** The next start fails with `reason` (each call queues one failure). */
  failNextStart(reason = 'The container exited with code 1 before it was ready'): void {
    this.failures.push(reason);
  }

  /** The next `remove` fails with `reason` (the engine unreachable: `unavailable`). */
  failNextRemove(reason = 'The engine cannot be reached', unavailable = true): void {
    this.removeFailures.push(new EngineError(reason, unavailable));
  }

  /**
   * The next start succeeds but its container exits at once with `reason` (a workspace that crashes
   * at boot: start() resolves, status() answers `exited`).
   */
  exitNextStart(reason = 'The container exited with code 3: boom'): void {
    this.exits.push(reason);
  }

  /**
   * Holds every start (after its first progress report) until the returned function is called: what
   * a test needs to act while a session is `starting`.
   */
  holdStarts(): () => void {
    if (!this.held) {
      let release!: () => void;
      const promise = new Promise<void>((resolve) => (release = resolve));
      this.held = {
        promise,
        release: () => {
          this.held = undefined;
          release();
        },
      };
    }
    return this.held.release;
  }

  /** The container vanishes, as if removed behind the engine's back. */
  loseContainer(containerId: string): void {
    this.containers.delete(containerId);
  }

  /** The container stops by itself (its process exited) with the engine's `reason`. */
  stopContainer(containerId: string, reason = 'Exited (137)'): void {
    const container = this.containers.get(containerId);
    if (container) container.exited = reason;
  }

  /** The running container of a session, if any. */
  containerOf(sessionId: string): MemoryContainer | undefined {
    return [...this.containers.values()].find((c) => c.spec.sessionId === sessionId);
  }

  async start(
    spec: SessionContainerSpec,
    options: { signal?: AbortSignal; onProgress?: (progress: StartProgress) => void } = {},
  ): Promise<{ containerId: string }> {
    if (this.closed) throw new EngineError('The engine is closed', true);
    this.started.push(spec);
    const { signal, onProgress } = options;
    const step = this.startDelayMs / 3;
    onProgress?.({ message: `Preparing ${spec.image}`, percent: 10 });
    await sleep(step, signal);
    if (this.held) {
      const held = this.held.promise;
      await new Promise<void>((resolve, reject) => {
        if (signal?.aborted) return reject(new EngineError('The start was cancelled'));
        signal?.addEventListener('abort', () => reject(new EngineError('The start was cancelled')), {
          once: true,
        });
        void held.then(resolve);
      });
    }
    onProgress?.({ message: 'Creating the container', percent: 40 });
    await sleep(step, signal);
    onProgress?.({ message: 'Starting the container', percent: 70 });
    await sleep(step, signal);
    const failure = this.failures.shift();
    if (failure !== undefined) throw new EngineError(failure);
    await this.listen();
    const containerId = randomBytes(32).toString('hex');
    this.containers.set(containerId, { containerId, spec, exited: this.exits.shift() });
    return { containerId };
  }

  async status(containerId: string): Promise<ContainerStatus> {
    const container = this.containers.get(containerId);
    if (!container) return { state: 'missing' };
    if (container.exited !== undefined) return { state: 'exited', reason: container.exited };
    // Port 1 on the loopback: nothing listens there.
    if (!this.answering) return { state: 'running', address: { host: '127.0.0.1', port: 1 } };
    return { state: 'running', address: this.addressOf(container) };
  }

  async exec(
    containerId: string,
    command: { cmd: string; user?: string; env?: Record<string, string> },
  ): Promise<void> {
    const container = this.containers.get(containerId);
    if (!container || container.exited !== undefined) throw new EngineError('The container is not running');
    this.execs.push({ containerId, ...command });
  }

  async remove(containerId: string): Promise<void> {
    const failure = this.removeFailures.shift();
    if (failure) throw failure;
    this.containers.delete(containerId);
  }

  async list(): Promise<SessionContainer[]> {
    return [...this.containers.values()].map((c) => ({
      containerId: c.containerId,
      sessionId: c.spec.sessionId,
      userId: c.spec.userId,
      running: c.exited === undefined,
    }));
  }

  async close(): Promise<void> {
    this.closed = true;
    this.held?.release();
    const listening = await this.server?.catch(() => undefined);
    if (!listening) return;
    listening.server.closeAllConnections();
    await new Promise<void>((resolve) => listening.server.close(() => resolve()));
  }
}
