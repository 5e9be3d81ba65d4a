import { Client } from 'pg';
import { sql } from 'kysely';
import {
  createEventLogRepository,
  EVENT_LOG_LOCK_SPACE,
  EVENT_LOG_V1,
  eventChannel,
  type EventsTable,
} from '../src';
import { migratedTestDatabase, type MigratedTestDatabase } from './support/database';

type DB = { events: EventsTable };

/**
 * The event log's SQL (EVENT_LOG_V1 and its repository) on the real PostgreSQL: ids commit in id
 * order, one small notification per statement, pruning by age and count under its bounds, one
 * pruner at a time.
 */
describe('event log', () => {
  let database: MigratedTestDatabase<DB>;
  const clients: Client[] = [];

  beforeAll(async () => {
    database = await migratedTestDatabase<DB>('events', { '2026-01-01T0000_events': EVENT_LOG_V1 });
  });
  afterAll(async () => {
    for (const c of clients) await c.end().catch(() => undefined);
    await database.drop();
  });
  beforeEach(async () => {
    await sql`delete from events`.execute(database.db);
  });

  async function client(): Promise<Client> {
    const c = new Client({ connectionString: database.url, options: `-c search_path=${database.schema}` });
    await c.connect();
    clients.push(c);
    return c;
  }

  const insert = (c: Client, kind = 'k') =>
    c.query<{ id: string }>(`insert into events (kind, payload) values ($1, '{}') returning id`, [kind]);

  test('a writer holding an event waits the next one out: ids commit in id order', async () => {
    const first = await client();
    const second = await client();
    await first.query('begin');
    const firstId = Number((await insert(first)).rows[0].id);
    let secondDone = false;
    const secondInsert = insert(second).then((r) => {
      secondDone = true;
      return Number(r.rows[0].id);
    });
    await new Promise((r) => setTimeout(r, 300));
    // Waiting on the log's advisory lock, not done, its id not drawn yet.
    expect(secondDone).toBe(false);
    const waiting = await sql<{ n: string }>`select count(*) as n from pg_locks
      where locktype = 'advisory' and classid = ${EVENT_LOG_LOCK_SPACE}
        and objid = 'events'::regclass::oid and not granted`.execute(database.db);
    expect(Number(waiting.rows[0].n)).toBe(1);
    await first.query('commit');
    expect(await secondInsert).toBeGreaterThan(firstId);
  });

  test('one notification per statement on <schema>.events, carrying only the newest id', async () => {
    const listener = await client();
    const payloads: string[] = [];
    listener.on('notification', (m) => {
      if (m.channel === eventChannel(database.schema)) payloads.push(m.payload ?? '');
    });
    await listener.query(`LISTEN "${eventChannel(database.schema)}"`);
    const { rows } = await sql<{ id: string }>`insert into events (kind, payload)
      select 'k', '{}' from generate_series(1, 3) returning id`.execute(database.db);
    const deadline = Date.now() + 3000;
    while (!payloads.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(payloads).toEqual([String(Math.max(...rows.map((r) => Number(r.id))))]);
  });

  test('after, bounds; pruning by count and by age, never above the floor, never the newest', async () => {
    const log = createEventLogRepository(database.db);
    expect(await log.bounds()).toEqual({ oldest: null, newest: null });
    const { rows } = await sql<{ id: string }>`insert into events (kind, payload)
      select 'k', jsonb_build_object('n', n) from generate_series(1, 10) n returning id`.execute(database.db);
    const ids = rows.map((r) => Number(r.id));
    expect(await log.after(ids[6], 10)).toEqual(
      [8, 9, 10].map((n, i) => ({ id: ids[7 + i], kind: 'k', payload: { n } })),
    );
    expect(await log.bounds()).toEqual({ oldest: ids[0], newest: ids[9] });

    const keepAll = { keepSeconds: 3600, keepMax: 100 };
    expect(await log.prune(keepAll)).toEqual({ deleted: 0 });
    // By count: 8 kept; the floor holds back what a stream still has to send.
    expect(await log.prune({ ...keepAll, keepMax: 8, floor: ids[0] })).toEqual({ deleted: 1 });
    expect(await log.prune({ ...keepAll, keepMax: 8 })).toEqual({ deleted: 1 });
    expect((await log.bounds()).oldest).toBe(ids[2]);
    // By age: the five oldest are two days old.
    await sql`update events set at = now() - interval '2 days' where id <= ${ids[4]}`.execute(database.db);
    expect(await log.prune(keepAll)).toEqual({ deleted: 3 });
    expect((await log.bounds()).oldest).toBe(ids[5]);
    // Everything old: all but the newest go.
    await sql`update events set at = now() - interval '2 days'`.execute(database.db);
    expect(await log.prune(keepAll)).toEqual({ deleted: 4 });
    expect(await log.bounds()).toEqual({ oldest: ids[9], newest: ids[9] });
  });

  test('one pruner at a time: a prune while another holds the log’s lock does nothing', async () => {
    const log = createEventLogRepository(database.db);
    await sql`insert into events (kind, payload) select 'k', '{}' from generate_series(1, 5)`.execute(
      database.db,
    );
    const other = await client();
    await other.query('begin');
    await other.query(
      `select pg_advisory_xact_lock(${EVENT_LOG_LOCK_SPACE}, 'events'::regclass::oid::integer)`,
    );
    expect(await log.prune({ keepSeconds: 3600, keepMax: 1 })).toBeNull();
    await other.query('commit');
    expect(await log.prune({ keepSeconds: 3600, keepMax: 1 })).toEqual({ deleted: 4 });
  });
});
