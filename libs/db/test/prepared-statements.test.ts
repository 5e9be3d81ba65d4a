import { CompiledQuery, Kysely, PostgresDialect, sql } from 'kysely';
import { Pool } from 'pg';
import { executeCompiled, openDatabase, param, prepare, type Database } from '../src';
import { runDirectly, type RunDirectlyOptions } from '../src/compiled/execute';
import { REMEMBERED_MAX } from '../src/compiled/row-maker';
import { testDatabase, type TestDatabase } from '../src/testing';

type Items = { items: { id: number; owner: number; body: string } };

interface PreparedHere {
  name: string;
  statement: string;
  generic: number;
  custom: number;
}

/**
 * The statements prepared in the session of the connection this runs on (PostgreSQL's own list:
 * one entry per Parse of a named statement that is still there), with the plans each run used.
 */
async function preparedHere(db: Kysely<any>): Promise<PreparedHere[]> {
  const { rows } = await sql<PreparedHere>`
    select name, statement, generic_plans::int as generic, custom_plans::int as custom
    from pg_prepared_statements where not from_sql order by prepare_time`.execute(db);
  return rows;
}

/** The entries of one statement text. */
const entriesOf = (prepared: PreparedHere[], text: string) => prepared.filter((p) => p.statement === text);

/**
 * A Kysely instance on a pool of one connection made here (not by `openDatabase`), for what its
 * pool's configuration decides: the connection options, whether statements are named.
 */
function ownPool(config: TestDatabase['config'], options: string, run: RunDirectlyOptions) {
  const pool = new Pool({
    connectionString: config.url,
    max: 1,
    options: `-c search_path=${config.schema} ${options}`,
  });
  const db = new Kysely<Items>({ dialect: new PostgresDialect({ pool }) });
  runDirectly(db, pool, undefined, run);
  return db;
}

/**
 * The hot path's statements go as named prepared statements: PostgreSQL parses (and analyses) each
 * once per connection instead of on every request. Told by PostgreSQL itself (pg_prepared_statements
 * of the connection), not by the driver.
 */
describe('named prepared statements', () => {
  const RUNS = 40;
  let s: TestDatabase;
  let d: Database<Items>;
  const errors: unknown[] = [];
  const opened: { destroy(): Promise<void> }[] = [];

  beforeAll(async () => {
    s = testDatabase('svc_named');
    // One connection: every statement below, and the look at pg_prepared_statements, run on it.
    d = await openDatabase<Items>(
      { ...s.config, poolMax: 1 },
      { onQuery: (event) => event.level === 'error' && errors.push(event.error) },
    );
    await sql`create schema ${sql.id(d.schema)}`.execute(d.db);
    await sql`create table items (id int primary key, owner int not null, body text not null)`.execute(d.db);
    await sql`insert into items select i, i % 3, 'item ' || i from generate_series(1, 30) i`.execute(d.db);
  }, 60_000);
  afterAll(async () => {
    for (const db of opened) await db.destroy();
    await d?.close();
    await s?.cleanup();
  });

  const byOwner = (db: Kysely<Items>) =>
    prepare(
      db,
      db.selectFrom('items').select(['id', 'body']).where('owner', '=', param<number>(1)).orderBy('id'),
      (owner: number) => [owner],
    );

  test(`a hot read run ${RUNS} times on one connection is prepared there once and run ${RUNS} times`, async () => {
    const find = byOwner(d.db);
    for (let i = 0; i < RUNS; i++) expect(await find(i % 3)).toHaveLength(10);
    const [entry, ...more] = entriesOf(await preparedHere(d.db), find.sql);
    expect(more).toEqual([]);
    expect(entry.name).toMatch(/^compiled_\d+$/);
    expect(entry.generic + entry.custom).toBe(RUNS);
  });

  test('two texts get two names, short enough for PostgreSQL to keep whole', async () => {
    const first = prepare(d.db, sql<{ n: number }>`select ${param<number>(1)}::int + 1 as n`, (n: number) => [
      n,
    ]);
    const second = prepare(
      d.db,
      sql<{ n: number }>`select ${param<number>(1)}::int + 2 as n`,
      (n: number) => [n],
    );
    expect([await first(1), await second(1), await first(2)]).toEqual([[{ n: 2 }], [{ n: 3 }], [{ n: 3 }]]);
    const prepared = await preparedHere(d.db);
    const names = [first, second].map((q) => entriesOf(prepared, q.sql).map((p) => p.name));
    expect(names[0]).toHaveLength(1);
    expect(names[1]).toHaveLength(1);
    expect(names[0][0]).not.toBe(names[1][0]);
    expect(new Set(prepared.map((p) => p.name)).size).toBe(prepared.length);
    for (const { name } of prepared) expect(Buffer.byteLength(name)).toBeLessThanOrEqual(63);
  });

  test('preparedStatements: false (DB_PREPARED_STATEMENTS): nothing stays prepared', async () => {
    const off = await openDatabase<Items>({ ...s.config, poolMax: 1, preparedStatements: false });
    try {
      const find = byOwner(off.db);
      expect(await find(1)).toHaveLength(10);
      expect(entriesOf(await preparedHere(off.db), find.sql)).toEqual([]);
    } finally {
      await off.close();
    }
  });

  test('with naming off (a pooler that cannot keep them) nothing stays prepared, the rows are the same', async () => {
    const db = ownPool(s.config, '', { named: false });
    opened.push(db);
    const find = byOwner(db);
    for (let i = 0; i < 3; i++) expect(await find(1)).toEqual(await byOwner(d.db)(1));
    expect(entriesOf(await preparedHere(db), find.sql)).toEqual([]);
  });

  test("a statement prepared to be planned for each run's values is sent unnamed; the default one moves to its generic plan", async () => {
    const db = ownPool(s.config, '', {});
    opened.push(db);
    const query = (body: string) =>
      db
        .selectFrom('items')
        .select('body')
        .where('id', '=', param<number>(1))
        .where('body', '<>', sql.lit(body));
    const once = prepare(db, query('once'), (id: number) => [id]);
    const eachRun = prepare(db, query('each run'), (id: number) => [id], { plan: 'each-run' });
    for (let id = 1; id <= 10; id++) {
      expect(await once(id)).toEqual([{ body: `item ${id}` }]);
      expect(await eachRun(id)).toEqual([{ body: `item ${id}` }]);
    }
    const prepared = await preparedHere(db);
    // PostgreSQL's default (auto): custom plans for 5 runs, then the generic one when it looks as cheap.
    expect(entriesOf(prepared, once.sql).map(({ generic, custom }) => ({ generic, custom }))).toEqual([
      { generic: 5, custom: 5 },
    ]);
    // Unnamed: parsed and planned for its values on every run, never kept.
    expect(entriesOf(prepared, eachRun.sql)).toEqual([]);
  });

  test('a statement whose columns changed under it (select *) runs again on fresh connections', async () => {
    const two = await openDatabase<Items>(
      { ...s.config, poolMax: 2 },
      { onQuery: (event) => event.level === 'error' && errors.push(event.error) },
    );
    try {
      await sql`create table shifting (a int)`.execute(two.db);
      await sql`insert into shifting values (1)`.execute(two.db);
      const all = CompiledQuery.raw('select * from shifting where a > $1', [0]);
      // Prepared on both connections (two runs at once take both).
      await Promise.all([executeCompiled(two.db, all), executeCompiled(two.db, all)]);
      await sql`alter table shifting add column b text default 'x'`.execute(two.db);
      errors.length = 0;
      expect((await executeCompiled(two.db, all)).rows).toEqual([{ a: 1, b: 'x' }]);
      expect((await executeCompiled(two.db, all)).rows).toEqual([{ a: 1, b: 'x' }]);
      expect(errors).toEqual([]);
      await sql`drop table shifting`.execute(two.db);
    } finally {
      await two.close();
    }
  });

  test(`texts past the first ${REMEMBERED_MAX} a process runs stay unnamed`, async () => {
    // This file's earlier statements count too: a few more than needed fill the remembered set.
    for (let i = 0; i < REMEMBERED_MAX; i++)
      await executeCompiled(d.db, CompiledQuery.raw(`select $1::int + ${i} as filler`, [0]));
    const last = CompiledQuery.raw('select $1::int as past_the_set', [7]);
    expect((await executeCompiled(d.db, last)).rows).toEqual([{ past_the_set: 7 }]);
    const prepared = await preparedHere(d.db);
    expect(entriesOf(prepared, 'select $1::int + 0 as filler')).toHaveLength(1);
    expect(entriesOf(prepared, last.sql)).toEqual([]);
  }, 60_000);
});
