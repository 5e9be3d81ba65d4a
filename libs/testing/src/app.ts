import type { FastifyInstance } from 'fastify';
import { openDatabase, type Database, type DatabaseConfig } from '@platform/db';
import { testDatabase } from '@platform/db/testing';

/** The database type a service's `buildApp` dependencies name (`{ database?: Database<DB> }`). */
export type DatabaseOf<Deps> = Deps extends { database?: Database<infer DB> } ? DB : never;

export interface TestAppOptions<C, Deps> {
  /** The service's name, the prefix of its fresh test schema. */
  service: string;
  /** The service's config loader: it reads only `env` and the quiet log level, never process.env. */
  loadConfig: (env: Record<string, string>) => C;
  /** The service's production factory. */
  buildApp: (config: C, deps: Deps) => Promise<FastifyInstance>;
  /** Environment variables of this test (they win over the log level). */
  env?: Record<string, string>;
  /** Dependencies besides the database (a movable clock). */
  dependencies?: Omit<Deps, 'database'>;
}

export interface TestApp<C, DB> {
  app: FastifyInstance;
  config: C;
  database: Database<DB>;
  /** SQL statements run so far: tests reset it with `queries.length = 0` and count. */
  queries: string[];
  /** The same statements with their parameters (reset it the same way). */
  statements: { sql: string; parameters: readonly unknown[] }[];
  /** Closes the app and the database, and drops the test schema. */
  close(): Promise<void>;
}

/**
 * The real app, built by the service's production factory with production server options, over a
 * fresh database: a new schema of the test PostgreSQL (DATABASE_URL, or the local server Jest's
 * global setup provides). Logs are silent unless TEST_LOG_LEVEL says otherwise.
 */
export async function buildTestApp<C extends { database: DatabaseConfig }, Deps>(
  options: TestAppOptions<C, Deps>,
): Promise<TestApp<C, DatabaseOf<Deps>>> {
  const fresh = testDatabase(options.service);
  const config = options.loadConfig({
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ...options.env,
  });
  config.database = { ...fresh.config };
  const queries: string[] = [];
  const statements: TestApp<C, DatabaseOf<Deps>>['statements'] = [];
  const database = await openDatabase<DatabaseOf<Deps>>(config.database, {
    onQuery: (event) => {
      if (event.level !== 'query') return;
      queries.push(event.query.sql);
      statements.push(event.query);
    },
  });
  let app: FastifyInstance | undefined;
  const close = async () => {
    await app?.close();
    await database.close();
    await fresh.cleanup();
  };
  try {
    // `Deps` is the service's dependency type: its database plus `dependencies`.
    app = await options.buildApp(config, { ...options.dependencies, database } as Deps);
    await app.ready();
  } catch (error) {
    await close();
    throw error;
  }
  return { app, config, database, queries, statements, close };
}

/** A test app listening on a random loopback port, and that address. */
export type TestServer<T extends { app: FastifyInstance }> = T & { baseUrl: string };

/**
 * Listens with a built test app on a random port of 127.0.0.1, for tests that need real HTTP or a
 * browser; closes it when it cannot listen.
 */
export async function startTestServer<T extends { app: FastifyInstance; close(): Promise<void> }>(
  testApp: T,
): Promise<TestServer<T>> {
  try {
    await testApp.app.listen({ port: 0, host: '127.0.0.1' });
    const address = testApp.app.server.address();
    if (!address || typeof address === 'string') throw new Error('server has no TCP address');
    return { ...testApp, baseUrl: `http://127.0.0.1:${address.port}` };
  } catch (error) {
    await testApp.close();
    throw error;
  }
}
