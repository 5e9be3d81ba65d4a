import { sql, type Kysely, type Migration } from 'kysely';

// Migrations are frozen in time and see any database as Kysely<any>.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDatabase = Kysely<any>;

// Frozen: a service's migration runs this, so its SQL must never change once a service has shipped
// it. A different event log is a new export (EVENT_LOG_V2), never an edit of this one.

/**
 * First key of the event log's two-key advisory locks; the second is the events table's oid, so
 * every log (one per schema) has locks of its own, apart from any one-key advisory lock.
 */
export const EVENT_LOG_LOCK_SPACE = 0x45564e54; // "EVNT"

/**
 * The event log of a service's schema: `events(id, kind, payload, at)`, append-only, written by the
 * service in the transaction (or statement) of the change it tells about.
 *
 * - Ids become visible in id order: a BEFORE INSERT row trigger takes the log's transaction-level
 *   advisory lock and only then draws the id, so a writer holding id N has committed (and is
 *   visible: PostgreSQL publishes a commit before it releases locks) before the next writer draws
 *   N+1. A reader that has seen id N never later sees a smaller id commit, so "everything after N"
 *   is a complete answer. The lock is held to commit: the event insert must be the last thing a
 *   writing transaction does (short, and no lock is taken after it, so no deadlock).
 * - A statement-level AFTER INSERT trigger notifies `<schema>.events` (see `eventChannel`) with the
 *   statement's largest new id, a few bytes: listeners read the rows themselves.
 *
 * The schema is never named: the trigger functions keep the migration's search_path.
 */
export const EVENT_LOG_V1: Migration = {
  async up(db: AnyDatabase): Promise<void> {
    await sql`create table events (
      id bigint primary key,
      kind text not null,
      payload jsonb not null,
      at timestamptz not null default now()
    )`.execute(db);
    await sql`create sequence events_id_seq owned by events.id`.execute(db);
    await sql`create function events_assign_id() returns trigger
      language plpgsql set search_path from current as $$
      begin
        -- One writer at a time from here to its commit: ids commit in id order.
        perform pg_advisory_xact_lock(${sql.lit(EVENT_LOG_LOCK_SPACE)}, tg_relid::integer);
        new.id := nextval('events_id_seq');
        return new;
      end $$`.execute(db);
    await sql`create trigger events_assign_id before insert on events
      for each row execute function events_assign_id()`.execute(db);
    await sql`create function events_notify() returns trigger
      language plpgsql set search_path from current as $$
      declare newest bigint;
      begin
        select max(id) into newest from inserted;
        if newest is not null then
          perform pg_notify(tg_table_schema || '.events', newest::text);
        end if;
        return null;
      end $$`.execute(db);
    await sql`create trigger events_notify after insert on events
      referencing new table as inserted
      for each statement execute function events_notify()`.execute(db);
  },
  async down(db: AnyDatabase): Promise<void> {
    await sql`drop table events`.execute(db);
    await sql`drop function events_notify()`.execute(db);
    await sql`drop function events_assign_id()`.execute(db);
  },
};

/** The channel the event log of `schema` notifies (`EVENT_LOG_V1`'s trigger names it so). */
export function eventChannel(schema: string): string {
  const channel = `${schema}.events`;
  // PostgreSQL refuses longer channel names (NAMEDATALEN - 1 bytes).
  if (Buffer.byteLength(channel) > 63)
    throw new Error(`schema name too long for an event channel: ${JSON.stringify(schema)}`);
  return channel;
}
