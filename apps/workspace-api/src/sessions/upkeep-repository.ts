import { sql, type Kysely } from 'kysely';
import type { SessionState, WorkspaceDatabase } from '../db/schema';

/**
 * First key of the sessions' two-key advisory locks ("SESS"); the second is a hash of the sessions
 * table's oid (one per schema: services or test files sharing a database keep apart) and of the
 * lock's name, so the sweeper and each engine's reconciler have locks of their own.
 */
export const SESSION_LOCK_SPACE = 0x53455353;

/** The live states in SQL, as literals: the partial indexes' predicate is then provably implied. */
const lit = (states: readonly SessionState[]) => sql.join(states.map((s) => sql.lit(s)));
/** The states a destroy (or the sweeper) moves to `stopping`. */
const STOPPABLE = ['requested', 'starting', 'running'] as const satisfies SessionState[];

/** What the reconciler reads of a live session of its engine. */
export interface UpkeepRow {
  id: string;
  state: SessionState;
  container_id: string | null;
  /** requested or starting for longer than the start may take: no start is running for it any more. */
  stale: boolean;
}

/**
 * The statements of the reconciler and the sweeper. Every state move is a compare-and-set on the
 * state the caller saw (and, for a running session, its container), so a move that lost a race to a
 * destroy, a start or another replica does nothing, and no session ever comes back from being over.
 */
export function createUpkeepRepository(db: Kysely<WorkspaceDatabase>) {
  return {
    /**
     * Runs `work` while this process holds the advisory lock `name` (transaction-level, tried, not
     * waited for: one holder across replicas); null when another holds it. The lock's transaction
     * stays open (idle, one pooled connection) while `work` runs its own statements on the pool.
     */
    async underLock<T>(name: string, work: () => Promise<T>): Promise<T | null> {
      return db.transaction().execute(async (trx) => {
        const { rows } = await sql<{ locked: boolean }>`
          select pg_try_advisory_xact_lock(${sql.lit(SESSION_LOCK_SPACE)},
            hashtext(('sessions'::regclass)::oid::text || ' ' || ${name})) as locked`.execute(trx);
        if (!rows[0].locked) return null;
        return work();
      });
    },

    /** Which of these sessions are live (ids in the database form), in one statement. */
    async liveAmong(ids: string[]): Promise<Set<string>> {
      if (!ids.length) return new Set();
      const rows = await db
        .selectFrom('sessions')
        .select('id')
        .where('id', '=', sql<string>`any(${ids}::uuid[])`)
        .where(sql<boolean>`state in (${lit(['requested', 'starting', 'running', 'stopping'])})`)
        .execute();
      return new Set(rows.map((r) => r.id));
    },

    /**
     * The live sessions made by one engine (its provider and host), each with whether it has been
     * requested or starting for longer than `startSeconds` (the database's clock).
     */
    liveOnEngine(provider: string, hostname: string, startSeconds: number): Promise<UpkeepRow[]> {
      return db
        .selectFrom('sessions')
        .select(['id', 'state', 'container_id'])
        .select(
          sql<boolean>`state in ('requested', 'starting') and created < now() - ${startSeconds} * interval '1 second'`.as(
            'stale',
          ),
        )
        .where(sql<boolean>`state in (${lit(['requested', 'starting', 'running', 'stopping'])})`)
        .where('provider', '=', provider)
        .where('hostname', '=', hostname)
        .orderBy('created')
        .execute();
    },

    /**
     * running → stopped with a reason: its container vanished or exited behind the service's back.
     * Only while it still runs with that container; false otherwise.
     */
    async stopGone(id: string, containerId: string, reason: string): Promise<boolean> {
      const row = await db
        .updateTable('sessions')
        .set({
          state: 'stopped',
          reason,
          message: reason,
          stopped: sql<Date>`now()`,
          connect_token_hash: null,
          connect_token_expires: null,
        })
        .where('id', '=', id)
        .where('state', '=', 'running')
        .where('container_id', '=', containerId)
        .returning('id')
        .executeTakeFirst();
      return row !== undefined;
    },

    /**
     * requested or starting (as seen) → failed, once it has been so for longer than `startSeconds`:
     * the process that ran its start is gone. The container it may have recorded, when it moved.
     */
    async interrupt(
      id: string,
      seen: 'requested' | 'starting',
      startSeconds: number,
      reason: string,
    ): Promise<{ container_id: string | null } | undefined> {
      return db
        .updateTable('sessions')
        .set({
          state: 'failed',
          reason,
          message: reason,
          stopped: sql<Date>`now()`,
          connect_token_hash: null,
          connect_token_expires: null,
        })
        .where('id', '=', id)
        .where('state', '=', seen)
        .where(sql<boolean>`created < now() - ${startSeconds} * interval '1 second'`)
        .returning('container_id')
        .executeTakeFirst();
    },

    /**
     * Up to `limit` sessions not yet stopping whose expiration has passed, soonest expired first:
     * one walk of the live sessions' expiration index.
     */
    listExpired(limit: number): Promise<{ id: string; state: SessionState }[]> {
      return db
        .selectFrom('sessions')
        .select(['id', 'state'])
        .where(sql<boolean>`state in (${lit(STOPPABLE)})`)
        .where('expiration', '<=', sql<Date>`now()`)
        .orderBy('expiration')
        .limit(limit)
        .execute();
    },

    /**
     * requested, starting or running → stopping, only while its expiration has passed (a keepalive
     * since it was listed saves it). Its container (if it has one yet) when it moved.
     */
    beginExpiredStop(id: string): Promise<{ container_id: string | null } | undefined> {
      return db
        .updateTable('sessions')
        .set({
          state: 'stopping',
          message: 'Stopping: the session expired',
          connect_token_hash: null,
          connect_token_expires: null,
        })
        .where('id', '=', id)
        .where(sql<boolean>`state in (${lit(STOPPABLE)})`)
        .where('expiration', '<=', sql<Date>`now()`)
        .returning('container_id')
        .executeTakeFirst();
    },
  };
}

export type UpkeepRepository = ReturnType<typeof createUpkeepRepository>;
