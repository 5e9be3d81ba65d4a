import { sql, type ColumnType, type Kysely } from 'kysely';
import { EVENT_LOG_LOCK_SPACE } from './migration';

/** The events table `EVENT_LOG_V1` makes; ids and times are the database's to assign. */
export interface EventsTable {
  /** bigint: pg answers it as text. */
  id: ColumnType<string, never, never>;
  kind: string;
  /** jsonb: written as JSON text, read back parsed. */
  payload: ColumnType<unknown, string, never>;
  at: ColumnType<Date, never, never>;
}

/** One row of the log, its id as a number (ids stay far below 2^53). */
export interface EventRow {
  id: number;
  kind: string;
  payload: unknown;
}

/** The oldest and newest ids the log holds (null when it is empty). */
export interface EventLogBounds {
  oldest: number | null;
  newest: number | null;
}

export interface PruneRequest {
  /** Events older than this many seconds may go. */
  keepSeconds: number;
  /** More than this many events: the oldest beyond it may go. */
  keepMax: number;
  /** No event with a larger id goes (an event a stream or the listener has still to send). */
  floor?: number;
  /** Most rows one prune deletes (the next prune goes on). Default 10,000. */
  batch?: number;
}

/**
 * What `prune` did: `null` when another process was pruning this log (the lock is one pruner at a
 * time across replicas), else the rows deleted.
 */
export type PruneResult = { deleted: number } | null;

/** Kysely cannot type a query over a table of a type parameter: the table as every log has it. */
type Log = Kysely<{ events: EventsTable }>;

/** The statements of the event log of any service whose schema has one (`EVENT_LOG_V1`). */
export function createEventLogRepository<DB extends { events: EventsTable }>(database: Kysely<DB>) {
  const db = database as unknown as Log;
  return {
    /**
     * Up to `limit` events after `afterId`, in id order: one walk of the primary key
     * (select id, kind, payload from events where id > $1 order by id limit $2).
     */
    async after(afterId: number, limit: number): Promise<EventRow[]> {
      const rows = await db
        .selectFrom('events')
        .select(['id', 'kind', 'payload'])
        .where('id', '>', String(afterId))
        .orderBy('id')
        .limit(limit)
        .execute();
      return rows.map((r) => ({ id: Number(r.id), kind: r.kind, payload: r.payload }));
    },

    /** The oldest and newest ids: both ends of the primary key, one statement. */
    async bounds(): Promise<EventLogBounds> {
      const { rows } = await sql<{ oldest: string | null; newest: string | null }>`
        select (select min(id) from events) as oldest, (select max(id) from events) as newest`.execute(db);
      const { oldest, newest } = rows[0];
      return {
        oldest: oldest === null ? null : Number(oldest),
        newest: newest === null ? null : Number(newest),
      };
    },

    /**
     * Deletes the events older than `keepSeconds` or beyond the newest `keepMax`, never one above
     * `floor` and never the newest (it marks where the log has got to, so a client's id above it is
     * known to be from elsewhere, and one below the oldest retained is known to be pruned). One
     * pruner at a time across replicas: a transaction-level advisory lock tried, not waited for.
     */
    async prune(request: PruneRequest): Promise<PruneResult> {
      const batch = request.batch ?? 10_000;
      return db.transaction().execute(async (trx) => {
        const { rows: locked } = await sql<{ locked: boolean }>`
          select pg_try_advisory_xact_lock(${sql.lit(EVENT_LOG_LOCK_SPACE)}, 'events'::regclass::oid::integer) as locked`.execute(
          trx,
        );
        if (!locked[0].locked) return null;
        // The horizon: the newest id that may go. By age: the one before the first event young
        // enough to keep (a walk of the primary key from the oldest end, as long as what goes). By
        // count: the one `keepMax` below the newest. Then bounded by the floor and the newest.
        const { rows } = await sql<{ horizon: string | null }>`
          with newest as (select max(id) as id from events),
          by_age as (
            select coalesce(
              (select id - 1 from events where at >= now() - make_interval(secs => ${request.keepSeconds})
               order by id limit 1),
              (select id from newest)) as id
          ),
          by_count as (select id from events order by id desc offset ${request.keepMax} limit 1)
          select least(
            greatest((select id from by_age), (select id from by_count)),
            (select id - 1 from newest),
            ${request.floor ?? null}::bigint
          ) as horizon`.execute(trx);
        const horizon = rows[0].horizon;
        if (horizon === null) return { deleted: 0 };
        const deleted = await sql`
          delete from events where id in (
            select id from events where id <= ${horizon} order by id limit ${batch})`.execute(trx);
        return { deleted: Number(deleted.numAffectedRows ?? 0) };
      });
    },
  };
}

export type EventLogRepository = ReturnType<typeof createEventLogRepository>;
