import { sql, type Kysely, type Migration } from 'kysely';
import { isDatabaseUnavailable, migrateToLatest, openDatabase, type Database } from '../src';
import { cuttableDatabase, testDatabase, type CuttableDatabase } from '../src/testing';

const elapsedSince = (start: number) => Date.now() - start;
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (e: unknown) => e,
  );

describe('statement and query timeouts', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  test('a query to a frozen database fails within the query timeout as "unavailable", and works after the thaw', async () => {
    const outage: CuttableDatabase = await cuttableDatabase('timeouts');
    cleanups.push(outage.close);
    const database = await openDatabase({ ...outage.config, poolMax: 1, queryTimeoutMs: 500 });
    cleanups.push(() => database.close());
    await sql`select 1`.execute(database.db);

    outage.proxy.freeze();
    const start = Date.now();
    const error = await failure(sql`select 1`.execute(database.db));
    expect(elapsedSince(start)).toBeLessThan(2000);
    expect(error).toMatchObject({ message: expect.stringMatching(/Query read timeout/) });
    expect(isDatabaseUnavailable(error)).toBe(true);

    outage.proxy.thaw();
    const { rows } = await sql<{ n: number }>`select 2 as n`.execute(database.db);
    expect(rows).toEqual([{ n: 2 }]);
  });

  describe('on the test PostgreSQL', () => {
    let database: Database<unknown>;
    beforeAll(async () => {
      const fresh = testDatabase('timeouts');
      cleanups.push(fresh.cleanup);
      database = await openDatabase({ ...fresh.config, poolMax: 1, statementTimeoutMs: 500 });
      cleanups.push(() => database.close());
    });

    test('the server cancels a statement running past the statement timeout (57014, "unavailable")', async () => {
      const start = Date.now();
      const error = await failure(sql`select pg_sleep(2)`.execute(database.db));
      expect(elapsedSince(start)).toBeLessThan(1500);
      expect(error).toMatchObject({ code: '57014' });
      expect(isDatabaseUnavailable(error)).toBe(true);
      await expect(sql`select 1 as n`.execute(database.db)).resolves.toMatchObject({ rows: [{ n: 1 }] });
    });

    test('migrations run without the statement timeout, which their connection gets back afterwards', async () => {
      const migrations: Record<string, Migration> = {
        '2026-01-01T0000_slow': {
          up: async (db: Kysely<any>) => {
            await sql`select pg_sleep(0.8)`.execute(db);
            await db.schema.createTable('slow').addColumn('id', 'integer').execute();
          },
        },
      };
      await expect(migrateToLatest(database.db, database.schema, migrations)).resolves.toEqual([
        '2026-01-01T0000_slow',
      ]);
      // One pooled connection: the one the migration used.
      const { rows } = await sql<{ statement_timeout: string }>`show statement_timeout`.execute(database.db);
      expect(rows).toEqual([{ statement_timeout: '500ms' }]);
    });
  });

  /** A pool of one connection as openDatabase makes it by default, over a fresh schema. */
  async function defaultPool() {
    const fresh = testDatabase('timeouts');
    cleanups.push(fresh.cleanup);
    const database = await openDatabase({ ...fresh.config, poolMax: 1 });
    cleanups.push(() => database.close());
    return database;
  }

  test('by default a statement may run 10 s', async () => {
    const database = await defaultPool();
    const { rows } = await sql<{ statement_timeout: string }>`show statement_timeout`.execute(database.db);
    expect(rows).toEqual([{ statement_timeout: '10s' }]);
  });

  test('no JIT compilation: a statement estimated costly runs, it does not spend its time compiling first', async () => {
    const database = await defaultPool();
    const { rows } = await sql<{ jit: string }>`show jit`.execute(database.db);
    expect(rows).toEqual([{ jit: 'off' }]);
    // A plan estimated above jit_above_cost (100,000 by default): no JIT section (where the server
    // has JIT, plain EXPLAIN shows one it would use).
    const plan = await sql<{ 'QUERY PLAN': string }>`
      explain select count(*) from generate_series(1, 10000000) g where g < 0`.execute(database.db);
    const text = plan.rows.map((r) => r['QUERY PLAN']).join('\n');
    expect(Number(/cost=[\d.]+\.\.([\d.]+)/.exec(text)![1])).toBeGreaterThan(100_000);
    expect(text).not.toMatch(/\bJIT\b/);
  });

  test.each([
    [{ code: '57014' }, true],
    [new Error('Query read timeout'), true],
    [{ code: '55P03' }, false],
  ])('isDatabaseUnavailable(%p) is %p', (error, expected) => {
    expect(isDatabaseUnavailable(error)).toBe(expected);
  });
});
