import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql, type Generated, type Kysely, type Migration } from 'kysely';
import { isDatabaseUnavailable, migrateToLatest, openDatabase, sqlState, SQLSTATE, type Database } from '../src';
import { dropSchema, startEmbeddedServer, testDatabase } from '../src/testing';

const migrations: Record<string, Migration> = {
  '2026-01-01T0000_notes': {
    up: async (db: Kysely<any>) => {
      await db.schema.createTable('notes').addColumn('id', 'serial', (c) => c.primaryKey()).addColumn('body', 'text', (c) => c.notNull().unique()).execute();
    },
  },
};
type Notes = { notes: { id: Generated<number>; body: string } };

/** Two services sharing one database: each in its own schema, never naming it. */
describe.each([
  ['the database DATABASE_URL names (or embedded over the wire when unset)', 'network'],
  ['an embedded database file', 'file'],
] as const)('per-service schemas on %s', (_label, mode) => {
  let a: Database<Notes>;
  let b: Database<Notes>;
  const cleanups: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    if (mode === 'file') {
      const dir = mkdtempSync(join(tmpdir(), 'db-lib-'));
      cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
      // One process owns an embedded data directory: both schemas through one connection in turn.
      a = await openDatabase<Notes>({ dataDir: dir, schema: 'svc_a' });
      await migrateToLatest(a.db, 'svc_a', migrations);
      await a.db.insertInto('notes').values({ body: 'from a' }).execute();
      await a.close();
      b = await openDatabase<Notes>({ dataDir: dir, schema: 'svc_b' });
      await migrateToLatest(b.db, 'svc_b', migrations);
      await b.db.insertInto('notes').values({ body: 'from b' }).execute();
      await b.close();
      a = await openDatabase<Notes>({ dataDir: dir, schema: 'svc_a' });
      b = a; // reopened: persistence is checked below
      return;
    }
    const urlFor = async (schema: string) => {
      if (process.env.DATABASE_URL) return process.env.DATABASE_URL;
      const server = await startEmbeddedServer(schema); // one schema per embedded server
      cleanups.push(() => server.stop());
      return server.url;
    };
    const sa = testDatabase('svc_a', { DATABASE_URL: await urlFor('svc_a') });
    const sb = testDatabase('svc_b', { DATABASE_URL: await urlFor('svc_b') });
    if (!process.env.DATABASE_URL) {
      sa.config.schema = 'svc_a';
      sb.config.schema = 'svc_b';
    }
    cleanups.push(sa.cleanup, sb.cleanup);
    a = await openDatabase<Notes>({ ...sa.config, poolMax: 2 });
    b = await openDatabase<Notes>({ ...sb.config, poolMax: 2 });
    await migrateToLatest(a.db, a.schema, migrations);
    await migrateToLatest(b.db, b.schema, migrations);
    await a.db.insertInto('notes').values({ body: 'from a' }).execute();
    await b.db.insertInto('notes').values({ body: 'from b' }).execute();
  }, 60_000);

  afterAll(async () => {
    await a?.close();
    if (b !== a) await b?.close();
    for (const c of cleanups.reverse()) await c();
  });

  test('same table names, separate data, migration bookkeeping inside each schema', async () => {
    expect(await a.db.selectFrom('notes').select('body').execute()).toEqual([{ body: 'from a' }]);
    if (mode === 'network') expect(await b.db.selectFrom('notes').select('body').execute()).toEqual([{ body: 'from b' }]);
    const { rows } = await sql<{ table_schema: string; table_name: string }>`
      select table_schema, table_name from information_schema.tables
      where table_schema like 'svc_%' order by table_schema, table_name`.execute(a.db);
    const names = rows.map((r) => `${r.table_schema.replace(/_test_[0-9a-f]+$/, '')}.${r.table_name}`);
    // Over the wire without DATABASE_URL each schema lives in its own embedded server.
    if (mode === 'network' && !process.env.DATABASE_URL) {
      expect(names).toEqual(['svc_a.kysely_migration', 'svc_a.kysely_migration_lock', 'svc_a.notes']);
      return;
    }
    expect(names).toEqual(['svc_a.kysely_migration', 'svc_a.kysely_migration_lock', 'svc_a.notes', 'svc_b.kysely_migration', 'svc_b.kysely_migration_lock', 'svc_b.notes']);
    expect(await sql<{ n: string }>`select count(*)::text as n from pg_catalog.pg_tables where schemaname = 'public' and tablename = 'notes'`.execute(a.db)).toMatchObject({ rows: [{ n: '0' }] });
  });

  test('migrating again is a no-op; constraint errors keep their SQLSTATE', async () => {
    expect(await migrateToLatest(a.db, a.schema, migrations)).toEqual([]);
    const duplicate = await a.db.insertInto('notes').values({ body: 'from a' }).execute().catch((e: unknown) => e);
    expect(sqlState(duplicate)).toBe(SQLSTATE.uniqueViolation);
    expect(isDatabaseUnavailable(duplicate)).toBe(false);
    await expect(a.ping()).resolves.toBeUndefined();
  });
});

describe('embedded database maintenance', () => {
  test('statistics exist for data written before the database was opened (PGlite has no autovacuum)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'db-analyze-'));
    try {
      let db = await openDatabase<Notes>({ dataDir: dir, schema: 'stats' });
      await migrateToLatest(db.db, 'stats', migrations);
      await db.db.insertInto('notes').values(Array.from({ length: 50 }, (_, i) => ({ body: `n${i}` }))).execute();
      await db.close();
      db = await openDatabase<Notes>({ dataDir: dir, schema: 'stats' });
      const { rows } = await sql<{ reltuples: number }>`
        select reltuples from pg_class where relname = 'notes' and relnamespace = 'stats'::regnamespace`.execute(db.db);
      await db.close();
      expect(rows[0].reltuples).toBe(50); // -1 would mean "never analysed": the planner guesses
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});

describe('openDatabase and helpers', () => {
  test('refuses schema names that could inject SQL', async () => {
    await expect(openDatabase({ schema: 'x"; drop table y; --' })).rejects.toThrow(/invalid schema name/);
    await expect(dropSchema('postgres://unused', 'Bad-Name')).rejects.toThrow(/invalid schema name/);
  });

  test('an unreachable PostgreSQL is "unavailable", quickly', async () => {
    const db = await openDatabase({ url: 'postgres://postgres@127.0.0.1:1/none', schema: 'x', connectTimeoutMs: 500 });
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

  test('testDatabase: a unique schema per call on PostgreSQL, in-memory otherwise', () => {
    const pg1 = testDatabase('svc', { DATABASE_URL: 'postgres://h/db' });
    const pg2 = testDatabase('svc', { DATABASE_URL: 'postgres://h/db' });
    expect(pg1.config.schema).toMatch(/^svc_test_[0-9a-f]{10}$/);
    expect(pg1.config.schema).not.toBe(pg2.config.schema);
    expect(testDatabase('svc', {}).config).toEqual({ schema: 'svc' });
  });
});
