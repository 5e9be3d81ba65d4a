import fp from 'fastify-plugin';
import {
  migrateToLatest,
  openDatabase,
  type Database,
  type DatabaseConfig,
  type Migration,
} from '@platform/db';

// Each service declares `FastifyInstance.database` with its own table types.

export interface DatabasePluginOptions {
  config: DatabaseConfig;
  migrateOnStart: boolean;
  migrations: Record<string, Migration>;
  /** An already-open database (tests); the app then leaves closing it to the caller. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any service's tables
  database?: Database<any>;
}

/** The app's way to its database: opens it (or takes the given one), migrates it, and closes it with the app. */
export const databasePlugin = fp(
  async function databasePlugin(app, options: DatabasePluginOptions) {
    const owned = !options.database;
    const database =
      options.database ??
      (await openDatabase(options.config, {
        onConnectionError: (err) =>
          app.log.warn({ err }, 'database connection lost; the pool will reconnect'),
      }));
    if (options.migrateOnStart) await migrateToLatest(database.db, database.schema, options.migrations);
    // Typed by the service's own `FastifyInstance.database` declaration.
    app.decorate('database', database as never);
    if (owned) app.addHook('onClose', () => database.close());
  },
  { name: 'database', fastify: '5.x' },
);

/**
 * Opens the service's database, brings its schema up to date, runs `use`, and closes the database
 * even when migrating or `use` fails: how a command of the service's command line reaches it.
 */
export async function withServiceDatabase<DB, T>(
  config: DatabaseConfig,
  migrations: Record<string, Migration>,
  use: (database: Database<DB>, applied: string[]) => Promise<T>,
): Promise<T> {
  const database = await openDatabase<DB>(config);
  try {
    const applied = await migrateToLatest(database.db, database.schema, migrations);
    return await use(database, applied);
  } finally {
    await database.close();
  }
}
