import { CompiledQuery, sql, type Generated } from 'kysely';
import {
  executeCompiled,
  rowMaker,
  isDatabaseUnavailable,
  migrateToLatest,
  openDatabase,
  sqlState,
  SQLSTATE,
} from '../src';
import { dropSchema, testDatabase } from '../src/testing';
import { migratedTestDatabase, oneTableMigrations, type MigratedTestDatabase } from './support/database';

const migrations = oneTableMigrations('notes', (table) =>
  table
    .addColumn('id', 'serial', (c) => c.primaryKey())
    .addColumn('body', 'text', (c) => c.notNull().unique()),
);
type Notes = { notes: { id: Generated<number>; body: string } };

/** Two services sharing one database: each in its own schema, never naming it. */
describe('per-service schemas on one PostgreSQL', () => {
  let a: MigratedTestDatabase<Notes>;
  let b: MigratedTestDatabase<Notes>;

  beforeAll(async () => {
    a = await migratedTestDatabase<Notes>('svc_a', migrations, { poolMax: 2 });
    b = await migratedTestDatabase<Notes>('svc_b', migrations, { poolMax: 2 });
    await a.db.insertInto('notes').values({ body: 'from a' }).execute();
    await b.db.insertInto('notes').values({ body: 'from b' }).execute();
  }, 60_000);

  afterAll(async () => {
    await a?.drop();
    await b?.drop();
  });

  test('same table names, separate data, migration bookkeeping inside each schema', async () => {
    expect(await a.db.selectFrom('notes').select('body').execute()).toEqual([{ body: 'from a' }]);
    expect(await b.db.selectFrom('notes').select('body').execute()).toEqual([{ body: 'from b' }]);
    const { rows } = await sql<{ table_schema: string; table_name: string }>`
      select table_schema, table_name from information_schema.tables
      where table_schema in (${a.schema}, ${b.schema}) order by table_schema, table_name`.execute(a.db);
    const names = rows.map((r) => `${r.table_schema.replace(/_test_[0-9a-f]+$/, '')}.${r.table_name}`);
    expect(names).toEqual([
      'svc_a.kysely_migration',
      'svc_a.kysely_migration_lock',
      'svc_a.notes',
      'svc_b.kysely_migration',
      'svc_b.kysely_migration_lock',
      'svc_b.notes',
    ]);
    expect(
      await sql<{
        n: string;
      }>`select count(*)::text as n from pg_catalog.pg_tables where schemaname = 'public' and tablename = 'notes'`.execute(
        a.db,
      ),
    ).toMatchObject({ rows: [{ n: '0' }] });
  });

  test('migrating again is a no-op; constraint errors keep their SQLSTATE', async () => {
    expect(await migrateToLatest(a.db, a.schema, migrations)).toEqual([]);
    const duplicate = await a.db
      .insertInto('notes')
      .values({ body: 'from a' })
      .execute()
      .catch((e: unknown) => e);
    expect(sqlState(duplicate)).toBe(SQLSTATE.uniqueViolation);
    expect(isDatabaseUnavailable(duplicate)).toBe(false);
    await expect(a.ping()).resolves.toBeUndefined();
  });
});

describe('openDatabase and helpers', () => {
  test('refuses schema names that could inject SQL', async () => {
    await expect(openDatabase({ schema: 'x"; drop table y; --' })).rejects.toThrow(/invalid schema name/);
    await expect(dropSchema('postgres://unused', 'Bad-Name')).rejects.toThrow(/invalid schema name/);
  });

  test('an unreachable PostgreSQL is "unavailable", quickly', async () => {
    const db = await openDatabase({
      url: 'postgres://postgres@127.0.0.1:1/none',
      schema: 'x',
      connectTimeoutMs: 500,
    });
    const error = await db.ping().catch((e: unknown) => e);
    expect(isDatabaseUnavailable(error)).toBe(true);
    await db.close();
  });

  test.each([
    [{ code: 'ECONNREFUSED' }, true],
    [{ code: '57P01' }, true],
    [{ code: '08006' }, true],
    [new Error('Connection terminated unexpectedly'), true],
    [new Error('wrapped', { cause: Object.assign(new Error('x'), { code: 'ECONNRESET' }) }), true],
    [new AggregateError([Object.assign(new Error('a'), { code: 'ECONNREFUSED' })]), true],
    [{ code: '23505' }, false],
    [new Error('syntax error at or near "selec"'), false],
    [undefined, false],
  ])('isDatabaseUnavailable(%p) is %p', (error, expected) => {
    expect(isDatabaseUnavailable(error)).toBe(expected);
  });

  test('testDatabase: a unique schema per call; no PostgreSQL named is a clear error', () => {
    const pg1 = testDatabase('svc', { DATABASE_URL: 'postgres://h/db' });
    const pg2 = testDatabase('svc', { DATABASE_URL: 'postgres://h/db' });
    expect(pg1.config.schema).toMatch(/^svc_test_[0-9a-f]{10}$/);
    expect(pg1.config.schema).not.toBe(pg2.config.schema);
    expect(() => testDatabase('svc', {})).toThrow(/no DATABASE_URL/);
  });
});

/** The hot reads' path: a compiled query straight on the pool, as Kysely's executor would run it. */
describe('executeCompiled', () => {
  let d: MigratedTestDatabase<Notes>;
  const events: { level: string; sql: string }[] = [];

  beforeAll(async () => {
    d = await migratedTestDatabase<Notes>(
      'svc_direct',
      migrations,
      { poolMax: 1 },
      { onQuery: (event) => events.push({ level: event.level, sql: event.query.sql }) },
    );
    await d.db
      .insertInto('notes')
      .values([{ body: 'one' }, { body: 'two' }])
      .execute();
  }, 60_000);
  afterAll(async () => {
    await d?.drop();
  });

  const byBody = (body: string) =>
    CompiledQuery.raw('select id, body from notes where body = $1', [body]) as CompiledQuery<{
      id: number;
      body: string;
    }>;

  test('the same rows as Kysely, reported to onQuery', async () => {
    events.length = 0;
    const direct = await executeCompiled(d.db, byBody('two'));
    const viaKysely = await d.db.executeQuery(byBody('two'));
    expect(direct.rows).toEqual(viaKysely.rows);
    expect(direct.rows).toEqual([{ id: 2, body: 'two' }]);
    expect(events).toEqual([
      { level: 'query', sql: byBody('two').sql },
      { level: 'query', sql: byBody('two').sql },
    ]);
  });

  test('rows as pg makes them: columns in order, a repeated name keeps the later value, nulls and types parsed', async () => {
    const query = CompiledQuery.raw(
      `select 1 as "b", 'x'::text as "a", 2 as "b", null::int as "n", true as "ok", '{1,2}'::int[] as "xs", 'p' as "__proto__"`,
    );
    const direct = (await executeCompiled(d.db, query)).rows[0] as Record<string, unknown>;
    const viaKysely = (await d.db.executeQuery(query)).rows[0] as Record<string, unknown>;
    expect(Object.keys(direct)).toEqual(Object.keys(viaKysely));
    expect(Object.keys(direct)).toEqual(['b', 'a', 'n', 'ok', 'xs', '__proto__']);
    expect(direct).toEqual(viaKysely);
    expect(direct.b).toBe(2);
    expect(Object.getPrototypeOf(direct)).toBe(Object.prototype);
    expect(rowMaker(['a', 'b'])).toBe(rowMaker(['a', 'b']));
    expect(rowMaker(['"); throw 1; ("'])(['safe'])).toEqual({ '"); throw 1; ("': 'safe' });
  });

  test('one statement text run at once with different values: each run gets its own rows', async () => {
    const echo = (n: number) => CompiledQuery.raw('select $1::int as v, $2::text as t', [n, `#${n}`]);
    const results = await Promise.all(Array.from({ length: 20 }, (_, n) => executeCompiled(d.db, echo(n))));
    expect(results.map((r) => r.rows)).toEqual(Array.from({ length: 20 }, (_, n) => [{ v: n, t: `#${n}` }]));
  });

  test('one statement text whose columns change (a table altered under it) gets rows with the new columns', async () => {
    await d.db.schema.createTable('shifting').addColumn('a', 'integer').execute();
    await d.db
      .insertInto('shifting' as never)
      .values({ a: 1 } as never)
      .execute();
    const all = CompiledQuery.raw('select * from shifting');
    expect((await executeCompiled(d.db, all)).rows).toEqual([{ a: 1 }]);
    await d.db.schema
      .alterTable('shifting')
      .addColumn('b', 'text', (c) => c.defaultTo('x'))
      .execute();
    expect((await executeCompiled(d.db, all)).rows).toEqual([{ a: 1, b: 'x' }]);
    await d.db.schema.alterTable('shifting').renameColumn('a', 'c').execute();
    expect((await executeCompiled(d.db, all)).rows).toEqual([{ c: 1, b: 'x' }]);
    await d.db.schema.dropTable('shifting').execute();
  });

  test('an error keeps its SQLSTATE, is reported, and leaves the one pooled connection usable', async () => {
    events.length = 0;
    const insert = CompiledQuery.raw('insert into notes (body) values ($1) returning id', ['one']);
    const error = await executeCompiled(d.db, insert).catch((e: unknown) => e);
    expect(sqlState(error)).toBe(SQLSTATE.uniqueViolation);
    expect(events.map((e) => e.level)).toEqual(['error']);
    // poolMax 1: the connection went back to the pool and still answers.
    expect((await executeCompiled(d.db, byBody('one'))).rows).toEqual([{ id: 1, body: 'one' }]);
  });

  test("inside a transaction it runs on the transaction's connection", async () => {
    const seen = await d.db
      .transaction()
      .execute(async (trx) => {
        await trx.insertInto('notes').values({ body: 'uncommitted' }).execute();
        const { rows } = await executeCompiled(trx, byBody('uncommitted'));
        throw Object.assign(new Error('roll back'), { rows });
      })
      .catch((e: { rows: unknown[] }) => e.rows);
    expect(seen).toEqual([{ id: expect.any(Number), body: 'uncommitted' }]);
    expect((await executeCompiled(d.db, byBody('uncommitted'))).rows).toEqual([]);
  });
});
