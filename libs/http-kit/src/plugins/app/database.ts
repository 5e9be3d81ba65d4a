import type { onRequestHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import {
  isDatabaseUnavailable,
  migrateToLatest,
  pendingMigrations,
  openDatabase,
  type Database,
  type DatabaseConfig,
  type Migration,
} from '@platform/db';
import { ServiceUnavailableError } from '../../errors';

// Each service declares `FastifyInstance.database` with its own table types (its tables are its
// own, so this plugin cannot declare them).

export interface DatabasePluginOptions {
  config: DatabaseConfig;
  migrateOnStart: boolean;
  migrations: Record<string, Migration>;
  /** An already-open database (tests); the app then leaves closing it to the caller. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any service's tables
  database?: Database<any>;
}

/** Back-off of the migration retries while the database is unreachable at start. */
export const MIGRATION_RETRY = { firstDelayMs: 500, maxDelayMs: 10_000 } as const;

/** The schema lacks migrations this build needs and this process does not run them (MIGRATE_ON_START=false). */
class MigrationsPendingError extends Error {
  constructor(readonly pending: string[]) {
    super(`waiting for migrations to be run elsewhere: ${pending.join(', ')}`);
  }
}

/**
 * The app's way to its database: opens it (or takes the given one), migrates it, and closes it with
 * the app. When the database cannot be reached at start (started beside it by compose or
 * Kubernetes), the app starts anyway, not ready: it retries migrating in the background with
 * exponential back-off, and until that succeeds its readiness fails and the service's own routes
 * (those registered after this plugin; not health, metrics or docs) answer 503. A migration that
 * fails for another reason (an SQL error) still fails the start. With `migrateOnStart` off (replicas
 * whose migrations a Job runs) it migrates nothing but is not ready, the same way, until the schema
 * has every migration of this build.
 */
export const databasePlugin = fp(
  async function databasePlugin(app, options: DatabasePluginOptions) {
    const owned = !options.database;
    const database =
      options.database ??
      (await openDatabase(options.config, {
        onConnectionError: (err) =>
          app.log.warn({ err }, 'database connection lost; the pool will reconnect'),
      }));
    const migrate = options.migrateOnStart
      ? () => migrateToLatest(database.db, database.schema, options.migrations)
      : async () => {
          const pending = await pendingMigrations(database.db, database.schema, options.migrations);
          if (pending.length) throw new MigrationsPendingError(pending);
        };
    /** Worth waiting for: the database away, or migrations another process has yet to run. */
    const transient = (error: unknown) =>
      isDatabaseUnavailable(error) || error instanceof MigrationsPendingError;

    let migrated = false;
    try {
      await migrate();
      migrated = true;
    } catch (error) {
      if (!transient(error)) {
        if (owned) await database.close();
        throw error;
      }
      app.log.warn(
        { err: error },
        error instanceof MigrationsPendingError
          ? 'schema not up to date and MIGRATE_ON_START is off: not ready until its migrations have run'
          : 'database unreachable at start; not ready until it migrates (retrying in the background)',
      );
    }
    if (migrated) {
      // Typed by the service's own `FastifyInstance.database` declaration.
      app.decorate('database', database as never);
      if (owned) app.addHook('onClose', () => database.close());
      return;
    }

    // Not migrated yet: readiness and the service's routes say so, whether the database is still
    // away or back with its schema not yet up to date.
    const notReady = () => new ServiceUnavailableError({ cause: new Error('database not migrated yet') });
    const gated = Object.create(database, {
      ping: {
        value: async (timeoutMs?: number) => {
          if (!migrated) throw notReady();
          await database.ping(timeoutMs);
        },
      },
    }) as typeof database;
    app.decorate('database', gated as never);
    const awaitMigrations: onRequestHookHandler = async () => {
      if (!migrated) throw notReady();
    };
    app.addHook('onRoute', (route) => {
      route.onRequest = [awaitMigrations, ...(route.onRequest ? [route.onRequest].flat() : [])];
    });

    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    const retry = (delayMs: number) => {
      timer = setTimeout(async () => {
        try {
          await migrate();
          migrated = true;
          app.log.info('database reachable and migrated: ready');
        } catch (error) {
          if (stopped) return;
          if (!transient(error)) {
            app.log.error({ err: error }, 'migrating failed; the service stays not ready');
            return;
          }
          const next = Math.min(delayMs * 2, MIGRATION_RETRY.maxDelayMs);
          app.log.warn({ err: error, retryInMs: next }, 'not migrated yet; trying again');
          if (!stopped) retry(next);
        }
      }, delayMs);
    };
    retry(MIGRATION_RETRY.firstDelayMs);
    app.addHook('onClose', async () => {
      stopped = true;
      clearTimeout(timer);
      // A migration attempt under way fails fast once the pool ends.
      if (owned) await database.close();
    });
  },
  // Services name it in their plugins' dependencies.
  { name: 'database', fastify: '5.x' },
);
