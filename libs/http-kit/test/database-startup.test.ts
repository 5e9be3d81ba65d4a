import type { FastifyInstance } from 'fastify';
import { sql, type Kysely, type Migration } from 'kysely';
import type { Database } from '@platform/db';
import { cuttableDatabase, type CuttableDatabase } from '@platform/db/testing';
import { migrateToLatest, openDatabase } from '@platform/db';
import { MAX_CONNECTIONS, MAX_CONNECTIONS_PER_ADDRESS, type ServiceConfig } from '../src';
import { waitUntilReady } from '@platform/testing';
import { problemDialect } from './support/dialect';
import { smallServiceApp } from './support/platform';

const { dialect } = problemDialect('StartupProblem');

const notesTable: Migration['up'] = async (db: Kysely<any>) => {
  await db.schema.createTable('notes').addColumn('body', 'text').execute();
};

/** A service app as `createServiceApp` builds it, with one route of its own reading its table. */
async function buildApp(
  outage: CuttableDatabase,
  migrations: Record<string, Migration>,
  migrateOnStart = true,
) {
  const config: ServiceConfig = {
    mode: 'test',
    port: 0,
    host: '127.0.0.1',
    database: outage.config,
    migrateOnStart,
    shutdownDrainMs: 0,
    corsOrigins: '*',
    trustProxy: false,
    logLevel: process.env.TEST_LOG_LEVEL ?? 'silent',
    logFormat: 'json',
    maxConnections: MAX_CONNECTIONS,
    maxConnectionsPerAddress: MAX_CONNECTIONS_PER_ADDRESS,
    metricsToken: undefined,
    redisUrl: undefined,
  };
  const app = await smallServiceApp({
    config,
    dialect,
    title: 'startup',
    description: 'startup test',
    migrations,
  });
  app.get('/notes', async () => {
    const { db } = (app as unknown as { database: Database<any> }).database;
    return { count: (await db.selectFrom('notes').selectAll().execute()).length };
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return app;
}

describe('a service started before its database', () => {
  let outage: CuttableDatabase;
  let app: FastifyInstance | undefined;
  beforeEach(async () => {
    outage = await cuttableDatabase('startup');
    outage.proxy.cut();
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await outage.close();
  });

  test('listens not ready, retries migrating in the background, and is ready once migrated', async () => {
    let migrationStarted!: () => void;
    const started = new Promise<void>((resolve) => (migrationStarted = resolve));
    let finishMigration!: () => void;
    const finish = new Promise<void>((resolve) => (finishMigration = resolve));
    app = await buildApp(outage, {
      '2026-01-01T0000_notes': {
        up: async (db) => {
          migrationStarted();
          await finish;
          await notesTable(db);
        },
      },
    });
    expect(app.server.listening).toBe(true);
    expect((await app.inject('/healthz')).statusCode).toBe(200);
    expect((await app.inject('/readyz')).statusCode).toBe(503);
    const early = await app.inject('/notes');
    expect(early.statusCode).toBe(503);
    expect(early.headers['content-type']).toMatch(/^application\/vnd\.startup-problem\+json/);

    // The database is back, its schema not yet up to date: still not ready, still 503.
    outage.proxy.restore();
    await started;
    const database = (app as unknown as { database: Database<unknown> }).database;
    await expect(sql`select 1 as n`.execute(database.db)).resolves.toMatchObject({ rows: [{ n: 1 }] });
    expect((await app.inject('/readyz')).statusCode).toBe(503);
    expect((await app.inject('/notes')).statusCode).toBe(503);

    finishMigration();
    expect(await waitUntilReady(app, 5000)).toBe(true);
    const notes = await app.inject('/notes');
    expect(notes.statusCode).toBe(200);
    expect(notes.json()).toEqual({ count: 0 });
  });

  test('closing while it retries returns promptly', async () => {
    app = await buildApp(outage, { '2026-01-01T0000_notes': { up: notesTable } });
    await new Promise((r) => setTimeout(r, 700)); // past the first retry
    const start = Date.now();
    await app.close();
    app = undefined;
    expect(Date.now() - start).toBeLessThan(2000);
  });

  test('a migration that fails for another reason still fails the start', async () => {
    outage.proxy.restore();
    await expect(
      buildApp(outage, {
        '2026-01-01T0000_broken': { up: async (db) => void (await sql`selec 1`.execute(db)) },
      }),
    ).rejects.toThrow(/migrating schema .* failed at 2026-01-01T0000_broken/);
  });
});

describe('a replica with MIGRATE_ON_START=false (its migrations run by a Job)', () => {
  let outage: CuttableDatabase;
  let app: FastifyInstance | undefined;
  beforeEach(async () => {
    outage = await cuttableDatabase('replica');
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await outage.close();
  });

  const migrations = { '2026-01-01T0000_notes': { up: notesTable } };

  test('migrates nothing, is not ready until another process has run every migration, then serves', async () => {
    app = await buildApp(outage, migrations, false);
    expect((await app.inject('/healthz')).statusCode).toBe(200);
    expect((await app.inject('/readyz')).statusCode).toBe(503);
    const early = await app.inject('/notes');
    expect(early.statusCode).toBe(503);
    expect(early.headers['content-type']).toMatch(/^application\/vnd\.startup-problem\+json/);
    // It did not create the table itself.
    const job = await openDatabase({ ...outage.config, poolMax: 1 });
    try {
      const tables = await sql<{ n: number }>`select count(*)::int as n from information_schema.tables
        where table_schema = ${outage.config.schema} and table_name = 'notes'`.execute(job.db);
      expect(tables.rows[0].n).toBe(0);
      // The migration Job.
      await migrateToLatest(job.db, outage.config.schema, migrations);
    } finally {
      await job.close();
    }
    expect(await waitUntilReady(app, 15_000)).toBe(true);
    expect((await app.inject('/notes')).json()).toEqual({ count: 0 });
  }, 30_000);

  test('a schema already up to date is ready at once', async () => {
    const job = await openDatabase({ ...outage.config, poolMax: 1 });
    await migrateToLatest(job.db, outage.config.schema, migrations).finally(() => job.close());
    app = await buildApp(outage, migrations, false);
    expect((await app.inject('/readyz')).statusCode).toBe(200);
    expect((await app.inject('/notes')).statusCode).toBe(200);
  });
});
