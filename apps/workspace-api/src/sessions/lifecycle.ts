import { connect } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { WorkspaceDatabase } from '../db/schema';
import { EngineError, type SessionAddress, type SessionContainerSpec, type SessionEngine } from './engine';
import { createSessionsRepository } from './repository';

export interface LifecycleSettings {
  keepaliveSeconds: number;
  startTimeoutMs: number;
  /** Whether a running container's web port answers (default: a TCP connection is accepted). */
  answers?: (address: SessionAddress) => Promise<boolean>;
  /** How often a started container is looked at until it answers (default 200 ms). */
  readinessPollMs?: number;
}

/** Whether a TCP connection to the address is accepted within a second. */
export function acceptsConnections(address: SessionAddress): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: address.host, port: address.port, timeout: 1000 });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => done(true));
    socket.once('timeout', () => done(false));
    socket.once('error', () => done(false));
  });
}

/** Resolves after `ms`, or rejects as soon as `signal` aborts. */
const pause = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(new EngineError('aborted'));
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new EngineError('aborted'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });

/** Why a start was given up, in the words users read in `operational_message`. */
const seconds = (ms: number) => {
  const n = Math.round(ms / 1000);
  return `${n} second${n === 1 ? '' : 's'}`;
};
const TIMED_OUT = (ms: number) => `The workspace did not start within ${seconds(ms)}`;
const NOT_ANSWERING = (ms: number, address: SessionAddress) =>
  `The workspace did not answer on ${address.host}:${address.port} within ${seconds(ms)}`;
const VANISHED = 'The workspace\u2019s container disappeared while it started';
const SHUT_DOWN = 'The service stopped while the workspace was starting; request it again';
const INTERRUPTED = 'The service could not record the workspace\u2019s start; request it again';

/**
 * The work a session's container needs besides its request: each start runs in the background of
 * the process that took the request (requested → starting → running, or failed with the engine's
 * reason), bounded by `startTimeoutMs`, and can be cancelled by a destroy. Nothing here has to
 * survive the process: every move is a compare-and-set on the row, so a start that loses a race
 * (the session destroyed, the user deleted) removes the container it made, and a process that
 * dies mid-start leaves a row the reconciler settles.
 */
type Readiness = { ok: true } | { ok: false; reason: string };

export class SessionLifecycle {
  private readonly sessions;
  /** Where each container being waited for was last seen running (for the timeout's reason). */
  private readonly lastAddresses = new Map<string, SessionAddress>();
  /** The starts running in this process, by session id. */
  private readonly starts = new Map<string, { abort: AbortController; done: Promise<void> }>();
  private closing = false;

  constructor(
    db: Kysely<WorkspaceDatabase>,
    /** undefined: no engine is configured. */
    readonly engine: SessionEngine | undefined,
    private readonly settings: LifecycleSettings,
    private readonly log: FastifyBaseLogger,
  ) {
    this.sessions = createSessionsRepository(db);
  }

  /** Starts the container of a `requested` session in the background. */
  start(sessionId: string, spec: SessionContainerSpec): void {
    const engine = this.engine;
    if (!engine) throw new Error('no session engine');
    const abort = new AbortController();
    const done = this.run(engine, sessionId, spec, abort).catch(async (error: unknown) => {
      // A write that failed (the database away, the pool exhausted): the session fails now, when the
      // database lets it, rather than waiting for the reconciler's start timeout.
      this.log.error({ err: error, sessionId }, 'session start failed unexpectedly');
      await this.sessions.markFailed(sessionId, INTERRUPTED).catch(() => undefined);
    });
    this.starts.set(sessionId, { abort, done });
    void done.finally(() => this.starts.delete(sessionId));
  }

  /** Cancels the start of a session if this process runs it (its engine call is aborted). */
  cancelStart(sessionId: string): void {
    this.starts.get(sessionId)?.abort.abort();
  }

  /** Resolves once every start running now has settled (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.starts.size) await Promise.all([...this.starts.values()].map((s) => s.done));
  }

  /**
   * Removes containers whose sessions are over (a forced user deletion), each failure logged: what
   * is left, the reconciler removes (a labelled container without a live row).
   */
  async removeContainers(containerIds: string[]): Promise<void> {
    const engine = this.engine;
    if (!engine) return;
    await Promise.all(
      containerIds.map((id) =>
        engine.remove(id).catch((error: unknown) => {
          this.log.warn({ err: error, containerId: id }, 'a session container could not be removed');
        }),
      ),
    );
  }

  /** Shutdown: starts still running are cancelled (their sessions fail, their containers go). */
  async close(): Promise<void> {
    this.closing = true;
    for (const { abort } of this.starts.values()) abort.abort();
    await this.settled();
  }

  /**
   * Looks at a started container until its web port answers (ok), it exits or vanishes (not ok,
   * with the engine's reason); rejects when `signal` aborts (the deadline, a destroy, shutdown).
   */
  private async untilAnswering(
    engine: SessionEngine,
    containerId: string,
    signal: AbortSignal,
    onProgress: (progress: { message: string; percent: number }) => void,
  ): Promise<Readiness> {
    const answers = this.settings.answers ?? acceptsConnections;
    const every = this.settings.readinessPollMs ?? 200;
    for (let first = true; ; first = false) {
      if (signal.aborted) throw new EngineError('aborted');
      const status = await engine.status(containerId);
      if (status.state === 'exited') return { ok: false, reason: status.reason };
      if (status.state === 'missing') return { ok: false, reason: VANISHED };
      if (status.state === 'running') {
        this.lastAddresses.set(containerId, status.address);
        if (await answers(status.address)) return { ok: true };
      }
      if (first) onProgress({ message: 'Waiting for the workspace to answer', percent: 90 });
      await pause(every, signal);
    }
  }

  private async run(
    engine: SessionEngine,
    sessionId: string,
    spec: SessionContainerSpec,
    abort: AbortController,
  ): Promise<void> {
    if (!(await this.sessions.markStarting(sessionId))) return; // destroyed before it began
    const { startTimeoutMs } = this.settings;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      abort.abort();
    }, startTimeoutMs);

    // Progress is written one report at a time, the latest winning (a fast engine may report faster
    // than the database writes).
    let latest: { message: string; percent: number } | undefined;
    let writing: Promise<void> = Promise.resolve();
    let writer = false;
    const onProgress = (progress: { message: string; percent: number }) => {
      latest = progress;
      if (writer) return;
      writer = true;
      writing = (async () => {
        while (latest) {
          const next = latest;
          latest = undefined;
          await this.sessions
            .reportProgress(sessionId, next.message, next.percent)
            .catch((error: unknown) => {
              this.log.warn({ err: error, sessionId }, 'session progress not written');
            });
        }
        writer = false;
      })();
    };

    // The engine is told to stop at the deadline, and not waited for past it.
    const deadline = new Promise<never>((_, reject) =>
      abort.signal.addEventListener('abort', () => reject(new EngineError('aborted')), { once: true }),
    );
    const starting = engine.start(spec, { signal: abort.signal, onProgress });
    let containerId: string;
    try {
      ({ containerId } = await Promise.race([starting, deadline]));
    } catch (error) {
      clearTimeout(timer);
      await writing;
      // A start the engine finishes after all is removed.
      void starting.then(({ containerId: late }) => this.removeContainers([late])).catch(() => undefined);
      const reason = timedOut
        ? TIMED_OUT(startTimeoutMs)
        : this.closing
          ? SHUT_DOWN
          : error instanceof EngineError
            ? error.message
            : 'The container engine failed to start the workspace';
      if (!(error instanceof EngineError)) this.log.error({ err: error, sessionId }, 'session engine error');
      // False when a destroy cancelled it: the destroy settles the row.
      await this.sessions.markFailed(sessionId, reason);
      return;
    }
    // Recorded at once, so that a destroy from here on removes it (also from another replica).
    await this.sessions.recordContainer(sessionId, containerId);
    // Started is not serving: the container may exit right away (its reason then read from the
    // engine), and a session is running once its web port answers.
    const ready = await this.untilAnswering(engine, containerId, abort.signal, onProgress).catch(
      (error: unknown): Readiness => {
        const seen = this.lastAddresses.get(containerId);
        if (timedOut)
          return {
            ok: false,
            reason: seen ? NOT_ANSWERING(startTimeoutMs, seen) : TIMED_OUT(startTimeoutMs),
          };
        if (this.closing) return { ok: false, reason: SHUT_DOWN };
        return { ok: false, reason: error instanceof Error ? error.message : String(error) };
      },
    );
    this.lastAddresses.delete(containerId);
    clearTimeout(timer);
    await writing;
    if (!ready.ok) {
      // False when a destroy cancelled it (the destroy settles the row); the container goes either way.
      await this.sessions.markFailed(sessionId, ready.reason);
      await this.removeContainers([containerId]);
      return;
    }
    const running = await this.sessions.markRunning(sessionId, containerId, this.settings.keepaliveSeconds);
    if (!running) {
      // Destroyed (or its user deleted) while it started: the container is this start's to remove.
      await this.removeContainers([containerId]);
      return;
    }
    this.log.info({ sessionId, containerId }, 'session running');
  }
}
