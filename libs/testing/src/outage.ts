import type { FastifyInstance } from 'fastify';
import type { DatabaseConfig } from '@platform/db';
import { cuttableDatabase, type TcpProxy } from '@platform/db/testing';

export interface OutageTestAppOptions<C> {
  /** The service's name, the prefix of its fresh test schema. */
  service: string;
  /** The service's config loader: it reads only `env` and the quiet log level, never process.env. */
  loadConfig: (env: Record<string, string>) => C;
  /** The service's production factory: it opens the database itself, as in production. */
  buildApp: (config: C) => Promise<FastifyInstance>;
  /** Environment variables of this test (they win over the log level). */
  env?: Record<string, string>;
}

export interface OutageTestApp<C> {
  app: FastifyInstance;
  config: C;
  /** Cut it for "the database went away", restore it for "the database is back". */
  proxy: TcpProxy;
  /** Closes the app and the proxy, and drops the test schema. */
  close(): Promise<void>;
}

/**
 * The real app, built by the service's production factory, over a fresh schema of the test
 * PostgreSQL reached through a TCP proxy the test cuts and restores: outage tests of the whole stack
 * (driver, pool, error path, readiness). Logs are silent unless TEST_LOG_LEVEL says otherwise.
 */
export async function buildOutageTestApp<C extends { database: DatabaseConfig }>(
  options: OutageTestAppOptions<C>,
): Promise<OutageTestApp<C>> {
  const outage = await cuttableDatabase(options.service);
  const config = options.loadConfig({ LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent', ...options.env });
  config.database = outage.config;
  let app: FastifyInstance | undefined;
  const close = async () => {
    await app?.close();
    await outage.close();
  };
  try {
    app = await options.buildApp(config);
    await app.ready();
  } catch (error) {
    await close();
    throw error;
  }
  return { app, config, proxy: outage.proxy, close };
}
