import { sql, type Generated } from 'kysely';
import { isoTimestamp, param, prepare } from '../src';
import { migratedTestDatabase, oneTableMigrations, type MigratedTestDatabase } from './support/database';

type Events = { events: { id: Generated<number>; name: string; at: Date } };

const migrations = oneTableMigrations('events', (table) =>
  table
    .addColumn('id', 'serial', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('at', 'timestamptz', (c) => c.notNull()),
);

/** The one way a service runs a hot read: `prepare` with `param(n)`, the shared fragments. */
describe('compiled queries', () => {
  let d: MigratedTestDatabase<Events>;
  const seen: string[] = [];
  const at = [new Date('2026-11-22T09:15:00.123Z'), new Date('1999-12-31T23:59:59.999Z')];

  beforeAll(async () => {
    d = await migratedTestDatabase<Events>(
      'svc_compiled',
      migrations,
      {},
      {
        onQuery: (event) => seen.push(event.query.sql),
      },
    );
    await d.db
      .insertInto('events')
      .values([
        { name: 'launch', at: at[0] },
        { name: 'eve', at: at[1] },
      ])
      .execute();
  }, 60_000);
  afterAll(async () => {
    await d?.drop();
  });

  const byName = () =>
    prepare(
      d.db,
      d.db.selectFrom('events').select(['id', 'name']).where('name', '=', param<string>(1)),
      (name: string) => [name],
    );

  test('a query builder is compiled once; each call sends that text with its own values', async () => {
    const find = byName();
    expect(find.sql).toBe('select "id", "name" from "events" where "name" = $1');
    seen.length = 0;
    expect(await find('eve')).toEqual([{ id: 2, name: 'eve' }]);
    expect(await find('launch')).toEqual([{ id: 1, name: 'launch' }]);
    expect(await find('nobody')).toEqual([]);
    expect(seen).toEqual([find.sql, find.sql, find.sql]);
  });

  test('a sql template is compiled against the database it runs on', async () => {
    const count = prepare(
      d.db,
      sql<{ n: number }>`select count(*)::int as n from events where name <> ${param<string>(1)}`,
      (except: string) => [except],
    );
    expect(count.sql).toBe('select count(*)::int as n from events where name <> $1');
    expect(await count('eve')).toEqual([{ n: 1 }]);
  });

  test('a literal value is refused when the query is prepared, not when it runs', () => {
    expect(() =>
      prepare(d.db, d.db.selectFrom('events').selectAll().where('name', '=', 'eve'), () => []),
    ).toThrow(/takes its values through param\(n\) only/);
  });

  test('one mapping for a family of queries: values past the last placeholder are left out', async () => {
    const mapping = (limit: number, name: string) => [limit, name];
    const all = prepare(
      d.db,
      d.db.selectFrom('events').select('name').orderBy('id').limit(param<number>(1)),
      mapping,
    );
    const named = prepare(
      d.db,
      d.db
        .selectFrom('events')
        .select('name')
        .where('name', '=', param<string>(2))
        .orderBy('id')
        .limit(param<number>(1)),
      mapping,
    );
    expect(await all(1, 'eve')).toEqual([{ name: 'launch' }]);
    expect(await named(1, 'eve')).toEqual([{ name: 'eve' }]);
  });

  test("inside a transaction a prepared query runs on the transaction's connection", async () => {
    const rows = await d.db
      .transaction()
      .execute(async (trx) => {
        await trx.insertInto('events').values({ name: 'uncommitted', at: at[0] }).execute();
        const find = prepare(
          trx,
          trx.selectFrom('events').select('name').where('name', '=', param<string>(1)),
          (name: string) => [name],
        );
        throw Object.assign(new Error('roll back'), { rows: await find('uncommitted') });
      })
      .catch((e: { rows: unknown[] }) => e.rows);
    expect(rows).toEqual([{ name: 'uncommitted' }]);
    expect(await byName()('uncommitted')).toEqual([]);
  });

  test('isoTimestamp writes what Date.prototype.toISOString writes, whatever the session time zone', async () => {
    const stamps = prepare(
      d.db,
      d.db
        .selectFrom('events')
        .select(['id', isoTimestamp('events.at').as('at')])
        .orderBy('id'),
      () => [],
    );
    const expected = at.map((date, i) => ({ id: i + 1, at: date.toISOString() }));
    expect(await stamps()).toEqual(expected);
    const elsewhere = await d.db.connection().execute(async (connection) => {
      await sql`set time zone 'Pacific/Kiritimati'`.execute(connection);
      try {
        return await connection
          .selectFrom('events')
          .select(['id', isoTimestamp('at').as('at')])
          .orderBy('id')
          .execute();
      } finally {
        await sql`reset time zone`.execute(connection);
      }
    });
    expect(elsewhere).toEqual(expected);
  });
});
