import type { FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import type { Config } from '../config';
import type { ApiKeyRow, SessionState, UserRow, WorkspaceDatabase } from '../db/schema';
import { keyHas, type Permission } from '../auth/permissions';
import {
  DestroyError,
  ExecFailed,
  ExecUnavailable,
  ImageDisabled,
  ImageNotAllowed,
  InvalidActingUser,
  InvalidImageId,
  InvalidKasmId,
  InvalidRequestDetail,
  KasmNotRunning,
  KeepaliveError,
  MissingParameters,
  NoActingUser,
  NoDefaultImage,
  NoUserSent,
  PrivilegedExec,
  SessionLimit,
  SessionsUnavailable,
  SharingUnsupported,
  Unauthorized,
} from '../errors';
import { named } from '../wire/fields';
import { cut64, parseId, toKasmDate, toKasmId } from '../wire/kasm';
import { EngineError, type SessionEngine } from './engine';
import type { SessionLifecycle } from './lifecycle';
import { createSessionsRepository, type SessionView } from './repository';
import {
  ENV_NAME,
  type ExecCommandKasmBody,
  type GetKasmStatusBody,
  type RequestKasmBody,
  type SessionBody,
} from './schemas';
import { toKasm } from './serialize';
import { containerSpecOf, webPortOf } from './spec';
import { kasmUrlOf, newConnectToken } from './tokens';

/** Who asks: the key, and the user it acts for (the body's `user_id`), as the auth hook found them. */
export interface Caller {
  key: ApiKeyRow;
  actingUser?: UserRow;
}

export const callerOf = (request: FastifyRequest): Caller => ({
  // Every operation route is behind the auth hook, which sets the key before any handler runs.
  key: request.apiKey!,
  actingUser: request.actingUser,
});

/** What `operational_message` says of a state the engine has not described. */
const STATE_MESSAGES: Record<SessionState, string> = {
  requested: 'Requested',
  starting: 'Starting',
  running: 'Running',
  stopping: 'Stopping',
  stopped: 'Stopped',
  failed: 'Failed',
};

/** An `environment` as given (the schema checked its values), its names checked. */
function environmentOf(value: unknown, field: string): Record<string, string> {
  const env = (value ?? {}) as Record<string, string>;
  for (const name of Object.keys(env))
    if (!ENV_NAME.test(name))
      throw new InvalidRequestDetail(
        `${field} names variables with letters, digits and _ (not starting with a digit): ${JSON.stringify(cut64(name))}`,
      );
  return env;
}

const currentTime = () => toKasmDate(new Date());

/**
 * Sessions (Kasm's "kasms"): requested here and started in the background on the configured
 * engine, kept alive, destroyed; each answers in Kasm's shapes. Ids are as clients send them.
 */
export function createSessionsService(
  db: Kysely<WorkspaceDatabase>,
  lifecycle: SessionLifecycle,
  settings: Config['sessions'],
) {
  const sessions = createSessionsRepository(db);

  /** The engine, or the clear refusal of a service that has none. */
  function engineOf(): SessionEngine {
    if (!lifecycle.engine) throw new SessionsUnavailable();
    return lifecycle.engine;
  }

  /** The session a client's `kasm_id` names (`Invalid kasm_id (<id>)` for a malformed or unknown one). */
  async function sessionOf(rawId: string | null | undefined): Promise<SessionView> {
    const given = named(rawId);
    if (given === undefined) throw new MissingParameters();
    const id = parseId(given);
    const row = id === undefined ? undefined : await sessions.find(id);
    if (!row) throw new InvalidKasmId(given);
    return row;
  }

  /**
   * Whether the caller may act on a session: its owner (the user the request acts for), or a key
   * holding `others` (Kasm's `Sessions Modify`/`Sessions Delete` over other users' sessions).
   */
  function authorize(row: SessionView, caller: Caller, others: Permission): void {
    const owner = caller.actingUser !== undefined && caller.actingUser.id === row.user_id;
    if (!owner && !keyHas(caller.key, others)) throw new Unauthorized();
  }

  return {
    /**
     * request_kasm: the user's session of an image one of their groups may use, within their
     * maximum; answered at once (`requested`) while the container starts in the background.
     */
    async request(body: RequestKasmBody, caller: Caller) {
      engineOf();
      const user = caller.actingUser;
      if (!user) throw new NoActingUser(caller.key.name);
      if (body.enable_sharing === true) throw new SharingUnsupported();
      const environment = environmentOf(body.environment, 'environment');
      const rawImage = named(body.image_id);
      if (rawImage === undefined) throw new NoDefaultImage();
      const imageId = parseId(rawImage);
      const found = imageId === undefined ? undefined : await sessions.findImageFor(imageId, user.id);
      if (!found) throw new InvalidImageId(rawImage);
      const { image, allowed } = found;
      if (!image.enabled) throw new ImageDisabled(toKasmId(image.id));
      if (!allowed) throw new ImageNotAllowed(toKasmId(image.id), toKasmId(user.id));

      const engine = engineOf();
      const connect = newConnectToken();
      const result = await sessions.request({
        userId: user.id,
        imageId: image.id,
        imageName: image.name,
        provider: engine.provider,
        hostname: engine.hostname,
        webPort: webPortOf(image, settings),
        environment,
        keepaliveSeconds: settings.keepaliveSeconds,
        maxPerUser: settings.maxPerUser,
        connectToken: connect.stored,
      });
      if (result.status === 'unknown-user') throw new InvalidActingUser(toKasmId(user.id));
      if (result.status === 'image-gone') throw new InvalidImageId(rawImage);
      if (result.status === 'limit') throw new SessionLimit(result.username);

      const { row, username } = result;
      const kasmId = toKasmId(row.id);
      const userId = toKasmId(user.id);
      lifecycle.start(row.id, containerSpecOf({ sessionId: kasmId, userId, environment }, image, settings));
      return {
        kasm_id: kasmId,
        status: row.state,
        user_id: userId,
        username,
        session_token: connect.token,
        kasm_url: kasmUrlOf(kasmId, userId, connect.token),
      };
    },

    /**
     * get_kasm_status: the user's session's state; once running, the `kasm` object and a fresh
     * `kasm_url` (a new one-time token, replacing the previous one).
     */
    async status(body: GetKasmStatusBody, caller: Caller) {
      engineOf();
      const user = caller.actingUser;
      if (!user) throw new NoUserSent();
      let row = await sessionOf(body.kasm_id);
      // Another user's session is not this user's to reach: answered like an unknown one.
      if (row.user_id !== user.id) throw new InvalidKasmId(named(body.kasm_id)!);
      let reached: { kasm: ReturnType<typeof toKasm>; kasm_url: string } | undefined;
      if (row.state === 'running') {
        const connect = newConnectToken();
        if (await sessions.issueConnectToken(row.id, connect.stored)) {
          const kasmId = toKasmId(row.id);
          reached = { kasm: toKasm(row), kasm_url: kasmUrlOf(kasmId, toKasmId(user.id), connect.token) };
        } else {
          // Stopped since it was read: answer what it is now.
          row = (await sessions.find(row.id)) ?? row;
        }
      }
      return {
        operational_status: row.state,
        operational_message: row.message ?? STATE_MESSAGES[row.state],
        operational_progress: row.progress,
        current_time: currentTime(),
        ...reached,
      };
    },

    /** get_kasms: every live session, with its user's name and where it runs. */
    async list() {
      engineOf();
      const rows = await sessions.listLive();
      return { kasms: rows.map(toKasm), current_time: currentTime() };
    },

    /**
     * keepalive: the session lives `SESSIONS_KEEPALIVE_SECONDS` from now (never less than it had).
     * Its owner, or a key with `Sessions Modify`.
     */
    async keepalive(body: SessionBody, caller: Caller) {
      engineOf();
      const row = await sessionOf(body.kasm_id);
      authorize(row, caller, 'Sessions Modify');
      const kept = await sessions.keepalive(row.id, settings.keepaliveSeconds);
      if (!kept) {
        const now = (await sessions.find(row.id)) ?? row;
        throw new KeepaliveError(`the session (${toKasmId(row.id)}) is ${now.state}`);
      }
      return { usage_reached: false };
    },

    /**
     * destroy_kasm: stopping, its container removed (a start under way is cancelled), stopped. Its
     * owner, or a key with `Sessions Delete`. A session already over answers `{}` too; one whose
     * container could not be removed stays `stopping` (503), and destroying it again retries.
     */
    async destroy(body: SessionBody, caller: Caller): Promise<void> {
      const engine = engineOf();
      const row = await sessionOf(body.kasm_id);
      authorize(row, caller, 'Sessions Delete');
      const stopping = (await sessions.beginStop(row.id)) ?? (row.state === 'stopping' ? row : undefined);
      if (!stopping) return; // over already
      lifecycle.cancelStart(row.id);
      // Without a container yet, its start (here or on another replica) removes the one it makes
      // when it finds the session stopping.
      if (stopping.container_id) {
        try {
          await engine.remove(stopping.container_id);
        } catch (error) {
          throw new DestroyError(error instanceof Error ? error.message : String(error));
        }
      }
      await sessions.markStopped(row.id);
    },

    /**
     * exec_command_kasm: `exec_config.cmd` started in the running session's container (not waited
     * for), as `exec_config.user`. Its owner, or a key with `Sessions Modify`.
     */
    async exec(body: ExecCommandKasmBody, caller: Caller) {
      const engine = engineOf();
      const config = body.exec_config;
      const cmd = named(config?.cmd);
      if (!config || cmd === undefined) throw new MissingParameters();
      if (config.privileged === true) throw new PrivilegedExec();
      const env = environmentOf(config.environment, 'exec_config.environment');
      const row = await sessionOf(body.kasm_id);
      authorize(row, caller, 'Sessions Modify');
      if (row.state !== 'running' || !row.container_id) throw new KasmNotRunning();
      try {
        await engine.exec(row.container_id, {
          cmd,
          user: named(config.user),
          env: Object.keys(env).length ? env : undefined,
        });
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        if (error instanceof EngineError && error.unavailable) throw new ExecUnavailable(message);
        throw new ExecFailed(message);
      }
      return { kasm: toKasm(row), current_time: currentTime() };
    },
  };
}

export type SessionsService = ReturnType<typeof createSessionsService>;
