import Fastify from 'fastify';
import { sql, type Kysely } from 'kysely';
import type { Database } from '@platform/db';
import { testDatabase } from '@platform/db/testing';
import { databasePlugin } from '../../src';

test('database opens, migrates and decorates app.database, and closes it with the app', async () => {
  const fresh = testDatabase('plugin');
  const app = Fastify();
  await app.register(databasePlugin, {
    config: fresh.config,
    migrateOnStart: true,
    migrations: {
      '0001_notes': {
        up: async (db: Kysely<any>) => {
          await db.schema.createTable('notes').addColumn('body', 'text').execute();
        },
      },
    },
  });
  try {
    const { database } = app as unknown as { database: Database<{ notes: { body: string } }> };
    await database.ping();
    await database.db.insertInto('notes').values({ body: 'hello' }).execute();
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from notes`.execute(database.db);
    expect(rows[0].n).toBe(1);
  } finally {
    await app.close();
    await fresh.cleanup();
  }
});
