/**
 * The container engine a workspace session runs on, as the sessions service sees it: one container
 * per session, made from an installed image, labelled with the session and user ids, reachable on one
 * web port. The Docker Engine API (`engine/docker.ts`, through dockerode) implements it today; an
 * in-process double (`engine/memory.ts`) runs `npm test` with nothing else installed; a Kubernetes
 * driver (a Pod per session) can follow behind the same interface.
 *
 * Every method is bounded in time by the driver and takes an `AbortSignal` where it can wait long.
 */

/** The labels every session container carries (the reconciler finds containers by them). */
export const SESSION_LABELS = {
  /** Marks a container as a workspace session of this platform. */
  managed: 'platform.workspace.session',
  /** The session's id (`kasm_id`, 32 lowercase hex characters). */
  session: 'platform.workspace.session-id',
  /** The owner's id (32 lowercase hex characters). */
  user: 'platform.workspace.user-id',
} as const;

/** What a session's container is made of (from the image's registry entry and the operator's settings). */
export interface SessionContainerSpec {
  sessionId: string;
  userId: string;
  /** The image reference `<repository>:<tag>` (the registry entry's `name`). */
  image: string;
  /** The registry entry's `docker_registry`, used when the image must be pulled. */
  registry?: string;
  /** `run_config.hostname`; unset: the engine's default. */
  hostname?: string;
  /** `run_config.environment` merged with `request_kasm`'s `environment` (the request wins). */
  env: Record<string, string>;
  /** `/dev/shm` size in bytes (`run_config.shm_size`), unset: the engine's default. */
  shmSizeBytes?: number;
  /** CPU limit in cores (the entry's `cores`). */
  cores?: number;
  /** Memory limit in bytes (the entry's `memory` MB × 2²⁰). */
  memoryBytes?: number;
  /**
   * Capabilities added back after all are dropped (`run_config.cap_add`), only those the operator's
   * setting allows; never privileged, never a host mount.
   */
  capAdd: string[];
  /** The port inside the container that serves the workspace (6901 for Kasm's images). */
  webPort: number;
}

/** Where a running session's web port is reached from this service. */
export interface SessionAddress {
  host: string;
  port: number;
}

/** A progress report while a container is being made (pull, create, start). */
export interface StartProgress {
  /** Shown to the user as `operational_message`. */
  message: string;
  /** 0–100, shown as `operational_progress`. */
  percent: number;
}

/** What the engine says of a session's container now. */
export type ContainerStatus =
  | { state: 'running'; address: SessionAddress }
  /** Created, not (yet) running. */
  | { state: 'created' }
  /**
   * It ran and stopped, or could not start: `reason` is readable and meant for users (Docker: "The
   * container exited with code 3: <its last line of output>", "… ran out of memory …", "… could not
   * start: <the runtime's error>").
   */
  | { state: 'exited'; reason: string }
  /** No such container. */
  | { state: 'missing' };

/** A labelled session container the engine holds (running or not). */
export interface SessionContainer {
  containerId: string;
  sessionId: string;
  userId: string;
  running: boolean;
}

/** A container that could not be made or started: `message` is the engine's reason, shown to users. */
export class EngineError extends Error {
  constructor(
    message: string,
    /** True when the engine itself could not be reached (a retry may help), false when it refused. */
    readonly unavailable = false,
  ) {
    super(message);
    this.name = 'EngineError';
  }
}

export interface SessionEngine {
  /** `docker`, `memory`, … (logged, shown in `get_kasms`' `server.provider`). */
  readonly provider: string;
  /** A name of the host the containers run on (`server.hostname`). */
  readonly hostname: string;
  /**
   * Makes and starts the session's container: the image used when present, pulled otherwise (from
   * `spec.registry` when given); `onProgress` told along the way. Resolves with the container's id
   * once it has been started (not necessarily serving yet); rejects with an `EngineError`. A
   * container made before a failure is removed before the promise rejects.
   *
   * "Started" is the engine's word: its process has been launched. A workspace whose process exits
   * right after (a bad environment, a crash at boot) is not a failed start — no engine can tell it
   * from one that exits a second later — so start() resolves and status() then answers `exited`
   * with the reason (the exit code and the container's last line of output); the container stays
   * until remove(), so that the reason can be read. start() rejects only when the engine refuses
   * to make or launch the container (no image, an entrypoint that does not exist, an unknown
   * network, a name already taken by this session) or cannot be reached.
   */
  start(
    spec: SessionContainerSpec,
    options?: { signal?: AbortSignal; onProgress?: (progress: StartProgress) => void },
  ): Promise<{ containerId: string }>;
  /** The container's state now ('missing' for an unknown id). */
  status(containerId: string): Promise<ContainerStatus>;
  /**
   * Runs `cmd` (a shell command line, `sh -c`) in the running container as `user` (default: the
   * image's), fire-and-forget as Kasm does: resolves once the command has been started.
   */
  exec(
    containerId: string,
    command: { cmd: string; user?: string; env?: Record<string, string> },
  ): Promise<void>;
  /** Stops (short grace) and removes the container; resolves when it is gone; a missing one is fine. */
  remove(containerId: string): Promise<void>;
  /** Every session container this engine holds (by `SESSION_LABELS.managed`). */
  list(): Promise<SessionContainer[]>;
  /** Releases the engine's connections. */
  close(): Promise<void>;
}
