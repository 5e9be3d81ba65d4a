import { sql, type Kysely, type Transaction } from 'kysely';
import { SQLSTATE, sqlState } from '@platform/db';
import {
  LIVE_STATES,
  type ImageRow,
  type SessionRow,
  type SessionState,
  type WorkspaceDatabase,
} from '../db/schema';
import type { StoredConnectToken } from './tokens';

/** A session with what its wire form shows of its user and image (the image may have been deleted). */
export type SessionView = SessionRow & {
  username: string;
  image_friendly_name: string | null;
  image_src: string | null;
};

export interface NewSessionRequest {
  userId: string;
  imageId: string;
  imageName: string;
  provider: string;
  hostname: string;
  webPort: number;
  environment: Record<string, string>;
  /** The first expiration: now + this. */
  keepaliveSeconds: number;
  /** The user's live sessions may not exceed this, the new one included. */
  maxPerUser: number;
  connectToken: StoredConnectToken;
}

export type RequestResult =
  | { status: 'requested'; row: SessionRow; username: string }
  | { status: 'unknown-user' }
  | { status: 'image-gone' }
  | { status: 'limit'; username: string };

/** `now() + seconds`, in SQL (the database's clock is the one every replica shares). */
const fromNow = (seconds: number) => sql<Date>`now() + ${seconds} * interval '1 second'`;

/**
 * Every statement about sessions. State changes are compare-and-set: each moves a session forward
 * only from the states it expects (`where state in (...)`), so a destroy racing a start, two
 * destroys, or a start finishing after its session was destroyed never bring a row back; the caller
 * learns from the answer whether its move happened. Ids are the database (dashed) form.
 */
export function createSessionsRepository(db: Kysely<WorkspaceDatabase>) {
  /** Sessions with their user's name and their image's names (left join: a deleted image is null). */
  const views = () =>
    db
      .selectFrom('sessions')
      .innerJoin('users', 'users.id', 'sessions.user_id')
      .leftJoin('images', 'images.id', 'sessions.image_id')
      .selectAll('sessions')
      .select([
        'users.username',
        'images.friendly_name as image_friendly_name',
        'images.image_src as image_src',
      ]);

  /** Moves session `id` from one of `from` to `to` with `changes`; the row when it moved. */
  const move = (
    id: string,
    from: readonly SessionState[],
    changes: Record<string, unknown> & { state: SessionState },
  ) =>
    db
      .updateTable('sessions')
      .set(changes)
      .where('id', '=', id)
      .where('state', 'in', from)
      .returningAll()
      .executeTakeFirst();

  /**
   * The maximum, decided inside the inserting transaction: the user's row is locked first, so the
   * concurrent requests of one user queue here and each counts what the ones before it inserted.
   */
  async function requestIn(
    trx: Transaction<WorkspaceDatabase>,
    r: NewSessionRequest,
  ): Promise<RequestResult> {
    const user = await trx
      .selectFrom('users')
      .select('username')
      .where('id', '=', r.userId)
      .forUpdate()
      .executeTakeFirst();
    if (!user) return { status: 'unknown-user' };
    const { live } = await trx
      .selectFrom('sessions')
      .select(sql<number>`count(*)::int`.as('live'))
      .where('user_id', '=', r.userId)
      .where('state', 'in', LIVE_STATES)
      .executeTakeFirstOrThrow();
    if (live >= r.maxPerUser) return { status: 'limit', username: user.username };
    const row = await trx
      .insertInto('sessions')
      .values({
        user_id: r.userId,
        image_id: r.imageId,
        image_name: r.imageName,
        provider: r.provider,
        hostname: r.hostname,
        web_port: r.webPort,
        environment: JSON.stringify(r.environment),
        expiration: fromNow(r.keepaliveSeconds),
        message: 'Requested',
        connect_token_hash: r.connectToken.hash,
        connect_token_expires: fromNow(r.connectToken.ttlSeconds),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    // Kasm's `last_session`: when the user last asked for a session.
    await trx.updateTable('users').set({ last_session: row.created }).where('id', '=', r.userId).execute();
    return { status: 'requested', row, username: user.username };
  }

  return {
    /**
     * Inserts a `requested` session unless the user already has their maximum of live sessions, and
     * stamps the user's `last_session`, in one transaction.
     */
    async request(r: NewSessionRequest): Promise<RequestResult> {
      try {
        return await db.transaction().execute((trx) => requestIn(trx, r));
      } catch (error) {
        // The image deleted since the service read it.
        if (sqlState(error) === SQLSTATE.foreignKeyViolation) return { status: 'image-gone' };
        throw error;
      }
    },

    /**
     * An image, and whether one of the user's groups may use it (the union get_user_images lists),
     * in one statement; undefined when there is no such image.
     */
    async findImageFor(
      imageId: string,
      userId: string,
    ): Promise<{ image: ImageRow; allowed: boolean } | undefined> {
      const row = await db
        .selectFrom('images')
        .selectAll('images')
        .select((eb) =>
          eb
            .exists(
              eb
                .selectFrom('group_images')
                .innerJoin('user_groups', 'user_groups.group_id', 'group_images.group_id')
                .select('group_images.image_id')
                .whereRef('group_images.image_id', '=', 'images.id')
                .where('user_groups.user_id', '=', userId),
            )
            .as('allowed'),
        )
        .where('images.id', '=', imageId)
        .executeTakeFirst();
      if (!row) return undefined;
      const { allowed, ...image } = row;
      return { image, allowed: Boolean(allowed) };
    },

    async find(id: string): Promise<SessionView | undefined> {
      return views().where('sessions.id', '=', id).executeTakeFirst();
    },

    /** Every live session (oldest first): get_kasms, and what the reconciler compares with the engine. */
    listLive(): Promise<SessionView[]> {
      return views()
        .where('sessions.state', 'in', LIVE_STATES)
        .orderBy('sessions.created')
        .orderBy('sessions.id')
        .execute();
    },

    /** The live sessions of these users (oldest first), in one statement whatever their number. */
    listLiveOfUsers(userIds: string[]): Promise<SessionRow[]> {
      if (!userIds.length) return Promise.resolve([]);
      return db
        .selectFrom('sessions')
        .selectAll()
        .where('user_id', '=', sql<string>`any(${userIds}::uuid[])`)
        .where('state', 'in', LIVE_STATES)
        .orderBy('created')
        .orderBy('id')
        .execute();
    },

    /** requested → starting; false when the session was destroyed first. */
    async markStarting(id: string): Promise<boolean> {
      return (
        (await move(id, ['requested'], { state: 'starting', message: 'Starting', progress: 0 })) !== undefined
      );
    },

    /** What the engine says while it starts the container (only while `starting`). */
    async reportProgress(id: string, message: string, percent: number): Promise<void> {
      await db
        .updateTable('sessions')
        .set({ message, progress: Math.max(0, Math.min(100, Math.round(percent))) })
        .where('id', '=', id)
        .where('state', '=', 'starting')
        .execute();
    },

    /** The container a start made, recorded while `starting` (a destroy then removes it). */
    async recordContainer(id: string, containerId: string): Promise<void> {
      await db
        .updateTable('sessions')
        .set({ container_id: containerId })
        .where('id', '=', id)
        .where('state', '=', 'starting')
        .execute();
    },

    /**
     * starting → running with its container; the expiration is counted from now (never shortened), so
     * a slow start does not eat into the session's life. Undefined when the session was destroyed
     * meanwhile: the caller removes the container it made.
     */
    markRunning(id: string, containerId: string, keepaliveSeconds: number): Promise<SessionRow | undefined> {
      return move(id, ['starting'], {
        state: 'running',
        container_id: containerId,
        started: sql<Date>`now()`,
        progress: 100,
        message: 'Running',
        expiration: sql<Date>`greatest(expiration, ${fromNow(keepaliveSeconds)})`,
      });
    },

    /** requested or starting → failed with the engine's reason; false when it was destroyed first. */
    async markFailed(id: string, reason: string): Promise<boolean> {
      return (
        (await move(id, ['requested', 'starting'], {
          state: 'failed',
          reason,
          message: reason,
          stopped: sql<Date>`now()`,
          connect_token_hash: null,
          connect_token_expires: null,
        })) !== undefined
      );
    },

    /**
     * requested, starting or running → stopping (a destroy begins; the connect token goes); the row
     * as it is now (its container, if it has one yet), or undefined when it was not in those states.
     */
    beginStop(id: string): Promise<SessionRow | undefined> {
      return move(id, ['requested', 'starting', 'running'], {
        state: 'stopping',
        message: 'Stopping',
        connect_token_hash: null,
        connect_token_expires: null,
      });
    },

    /** stopping → stopped (its container is gone); false when it was not stopping. */
    async markStopped(id: string, reason: string | null = null): Promise<boolean> {
      return (
        (await move(id, ['stopping'], {
          state: 'stopped',
          reason,
          message: 'Stopped',
          stopped: sql<Date>`now()`,
        })) !== undefined
      );
    },

    /**
     * Keeps a session that is not over yet alive: `keepalive` now, the expiration `seconds` from now
     * unless it is already later (never shortened). The row, or undefined when it was over (or stopping).
     */
    keepalive(id: string, seconds: number): Promise<SessionRow | undefined> {
      return db
        .updateTable('sessions')
        .set({
          keepalive: sql<Date>`now()`,
          expiration: sql<Date>`greatest(expiration, ${fromNow(seconds)})`,
        })
        .where('id', '=', id)
        .where('state', 'in', ['requested', 'starting', 'running'])
        .returningAll()
        .executeTakeFirst();
    },

    /** Replaces the connect token of a running session (the previous one stops working); false otherwise. */
    async issueConnectToken(id: string, token: StoredConnectToken): Promise<boolean> {
      const row = await db
        .updateTable('sessions')
        .set({ connect_token_hash: token.hash, connect_token_expires: fromNow(token.ttlSeconds) })
        .where('id', '=', id)
        .where('state', '=', 'running')
        .returning('id')
        .executeTakeFirst();
      return row !== undefined;
    },
  };
}

export type SessionsRepository = ReturnType<typeof createSessionsRepository>;
