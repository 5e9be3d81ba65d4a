import fp from 'fastify-plugin';
import { migrateToLatest, openDatabase, type Database } from '@platform/db';
import type { Config } from '../../config';
import type { MicroblogDatabase } from '../../db/schema';
import { migrations } from '../../db/migrations';

declare module 'fastify' {
  interface FastifyInstance {
    database: Database<MicroblogDatabase>;
  }
}

export interface DatabasePluginOptions {
  config: Config;
  /** An already-open database (tests); the app then leaves closing it to the caller. */
  database?: Database<MicroblogDatabase>;
}

/** Opens the service's database (or takes the given one), migrates it, and closes it with the app. */
export default fp(
  async function databasePlugin(app, { config, database }: DatabasePluginOptions) {
    const owned = !database;
    const db =
      database ??
      (await openDatabase<MicroblogDatabase>(config.database, {
        onConnectionError: (err) => app.log.warn({ err }, 'database connection lost; the pool will reconnect'),
      }));
    if (config.migrateOnStart) await migrateToLatest(db.db as never, db.schema, migrations);
    app.decorate('database', db);
    if (owned) app.addHook('onClose', () => db.close());
  },
  { name: 'database' },
);
