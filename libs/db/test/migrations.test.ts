import { sql, type Kysely } from 'kysely';
import { migrateToLatest, openDatabase, type Database } from '../src';
import { droppedOtherSchema } from '../src/dropped-schema';
import { testDatabase, type TestDatabase } from '../src/testing';
import { oneTableMigrations } from './support/database';

/**
 * Kysely's Migrator finds its tables by introspecting every schema of the database, and a schema
 * another session drops during that catalog scan fails it with SQLSTATE 3F000 naming that schema
 * (test runs sharing one database drop their fresh schemas all the time).
 */
describe('migrations while another schema is dropped', () => {
  const fresh: TestDatabase[] = [];
  const opened: Database<unknown>[] = [];
  let side: Database<unknown>;
  const open = async (service: string) => {
    const test = testDatabase(service);
    fresh.push(test);
    const database = await openDatabase<unknown>({ ...test.config, poolMax: 2 });
    opened.push(database);
    return { database, test };
  };

  beforeAll(async () => {
    side = (await open('race_side')).database;
    await sql`create schema ${sql.id(side.schema)}`.execute(side.db);
  });
  afterAll(async () => {
    for (const database of opened) await database.close();
    for (const test of fresh) await test.cleanup();
  });

  /**
   * The error of Kysely's introspection when a schema is dropped under its scan, for certain: the
   * scan reads the catalog in a snapshot taken before the drop (in a test run, a drop lands in the
   * scan only sometimes), then looks that schema up by name.
   */
  const introspectionAcrossADrop = async (): Promise<{ error: unknown; dropped: string }> => {
    const other = testDatabase('race_other');
    fresh.push(other);
    const dropped = other.config.schema;
    await sql`create schema ${sql.id(dropped)}`.execute(side.db);
    await sql`create table ${sql.id(dropped, 'things')} (id serial primary key)`.execute(side.db);
    const error = await side.db
      .transaction()
      .setIsolationLevel('repeatable read')
      .execute(async (trx) => {
        await sql`select 1`.execute(trx);
        await other.cleanup();
        await trx.introspection.getTables({ withInternalKyselyTables: true });
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    return { error, dropped };
  };

  test('the error names the dropped schema: "another schema dropped" for every schema but that one', async () => {
    const { error, dropped } = await introspectionAcrossADrop();
    expect(error).toMatchObject({ code: '3F000', message: `schema "${dropped}" does not exist` });
    expect(droppedOtherSchema(error, side.schema)).toBe(dropped);
    expect(droppedOtherSchema(new Error('migrating failed', { cause: error }), side.schema)).toBe(dropped);
    // Its own schema gone is a real failure.
    expect(droppedOtherSchema(error, dropped)).toBeUndefined();
    const other = await sql`select * from no_such_table`.execute(side.db).catch((e: unknown) => e);
    expect(other).toMatchObject({ code: '42P01' });
    expect(droppedOtherSchema(other, side.schema)).toBeUndefined();
  });

  test('migrateToLatest runs the migrations again when another schema vanished under them', async () => {
    let attempts = 0;
    const migrations = oneTableMigrations(
      'notes',
      (table) => table.addColumn('id', 'serial', (c) => c.primaryKey()),
      async () => {
        attempts++;
        if (attempts === 1) throw (await introspectionAcrossADrop()).error;
      },
    );
    const { database } = await open('race_migrated');
    expect(await migrateToLatest(database.db, database.schema, migrations)).toEqual([
      '2026-01-01T0000_notes',
    ]);
    expect(attempts).toBe(2);
    // The failed attempt left nothing behind: one table, one migration recorded.
    const db = database.db as Kysely<any>;
    expect(await db.selectFrom('notes').selectAll().execute()).toEqual([]);
    expect(await db.selectFrom('kysely_migration').select('name').execute()).toEqual([
      { name: '2026-01-01T0000_notes' },
    ]);
  });

  test('any other failure of a migration fails migrateToLatest at once', async () => {
    let attempts = 0;
    const migrations = oneTableMigrations(
      'notes',
      (table) => table.addColumn('id', 'serial', (c) => c.primaryKey()),
      async (db) => {
        attempts++;
        await sql`select * from no_such_table`.execute(db);
      },
    );
    const { database } = await open('race_failing');
    await expect(migrateToLatest(database.db, database.schema, migrations)).rejects.toThrow(
      /migrating schema "race_failing_test_[0-9a-f]+" failed at 2026-01-01T0000_notes: relation "no_such_table" does not exist/,
    );
    expect(attempts).toBe(1);
  });
});
