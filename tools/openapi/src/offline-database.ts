import {
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type DatabaseConnection,
  type Driver,
} from 'kysely';
import type { Database } from '@platform/db';

/** What every query of the offline database fails with: "the database is away" to the service. */
function refused(): Error {
  return Object.assign(new Error('no database: the OpenAPI document is written without one'), {
    code: 'ECONNREFUSED',
  });
}

const refusingDriver: Driver = {
  async init() {},
  async acquireConnection(): Promise<DatabaseConnection> {
    throw refused();
  },
  async beginTransaction() {},
  async commitTransaction() {},
  async rollbackTransaction() {},
  async releaseConnection() {},
  async destroy() {},
};

/**
 * A database for `buildApp(config, { database })` that is never there: every query fails as a
 * refused connection (`isDatabaseUnavailable`), so the app starts the way it does beside a database
 * that is still down (not ready, migrations retried in the background until it closes) and registers
 * every route. Its URL names a Unix socket that does not exist, for the event streams' dedicated
 * listening connection, which fails at once and retries until the app closes. Nothing listens,
 * nothing connects: the document is the routes' schemas and nothing else.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any service's tables
export function offlineDatabase(): Database<any> {
  return {
    db: new Kysely({
      dialect: {
        createAdapter: () => new PostgresAdapter(),
        createDriver: () => refusingDriver,
        createIntrospector: (db) => new PostgresIntrospector(db),
        createQueryCompiler: () => new PostgresQueryCompiler(),
      },
    }),
    kind: 'postgres',
    schema: 'openapi',
    url: 'postgres://openapi@localhost/openapi?host=/nonexistent/openapi-offline',
    async ping() {
      throw refused();
    },
    async close() {},
  };
}
