export * from './tcp-proxy';
export * from './ports';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { assertSchemaName, type DatabaseConfig } from '../connection';
import { startTcpProxy, type TcpProxy } from './tcp-proxy';

export interface TestDatabase {
  config: DatabaseConfig & { url: string };
  /** Drops the schema `testDatabase` named. */
  cleanup(): Promise<void>;
}

/**
 * The PostgreSQL the tests use: `DATABASE_URL` as given, or (in `npm test` without it) the local
 * server that Jest's global setup started or joined and handed over in `DATABASE_URL`.
 */
export function testDatabaseUrl(env: NodeJS.ProcessEnv = process.env): string {
  const url = env.DATABASE_URL;
  if (!url)
    throw new Error(
      'no DATABASE_URL: run tests through Jest with the workspace preset (its global setup provides the local PostgreSQL)',
    );
  return url;
}

/**
 * A fresh database for one test file: a new, uniquely named schema of the test PostgreSQL, dropped
 * afterwards, so test files run in parallel and never touch a service's real data.
 */
export function testDatabase(service: string, env: NodeJS.ProcessEnv = process.env): TestDatabase {
  const url = testDatabaseUrl(env);
  const schema = `${service}_test_${randomBytes(5).toString('hex')}`;
  assertSchemaName(schema);
  return {
    config: { url, schema, poolMax: 20 },
    cleanup: () => dropSchema(url, schema),
  };
}

export async function dropSchema(url: string, schema: string): Promise<void> {
  assertSchemaName(schema);
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

export interface CuttableDatabase {
  /** Connects through the proxy to a fresh schema of the test PostgreSQL. */
  config: DatabaseConfig;
  proxy: TcpProxy;
  /** Closes the proxy and drops the schema. */
  close(): Promise<void>;
}

/**
 * A fresh database for one test file behind a TCP proxy the test can cut and restore, for outage
 * tests of a service's whole stack (driver, pool, error path).
 */
export async function cuttableDatabase(
  service: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<CuttableDatabase> {
  const fresh = testDatabase(service, env);
  const target = new URL(fresh.config.url);
  const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  const viaProxy = new URL(target);
  viaProxy.host = `127.0.0.1:${proxy.port}`;
  return {
    config: { url: viaProxy.toString(), schema: fresh.config.schema, poolMax: 2, connectTimeoutMs: 1000 },
    proxy,
    async close() {
      await proxy.close();
      await fresh.cleanup();
    },
  };
}
export * from './statements';
export * from './metered-app';
export * from './wire-exact';
