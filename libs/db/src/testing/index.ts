export * from './tcp-proxy';
export * from './embedded-server';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { assertSchemaName, type DatabaseConfig } from '../connection';
import { startEmbeddedServer } from './embedded-server';
import { startTcpProxy, type TcpProxy } from './tcp-proxy';

export interface TestDatabase {
  config: DatabaseConfig;
  /** Drops what `testDatabase` created (a no-op for the embedded database, which lives in memory). */
  cleanup(): Promise<void>;
}

/**
 * A fresh database for one test file: on real PostgreSQL (when `DATABASE_URL` is set) a new,
 * uniquely named schema that is dropped afterwards, so test files run in parallel; otherwise a new
 * in-memory embedded database.
 */
export function testDatabase(service: string, env: NodeJS.ProcessEnv = process.env): TestDatabase {
  const url = env.DATABASE_URL;
  if (!url) return { config: { schema: service }, cleanup: async () => undefined };
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
  /** Connects through the proxy: a real PostgreSQL schema, or the embedded database over the wire. */
  config: DatabaseConfig;
  proxy: TcpProxy;
  /** Closes the proxy, stops the embedded server and drops the schema. */
  close(): Promise<void>;
}

/**
 * A fresh database for one test file behind a TCP proxy the test can cut and restore: real
 * PostgreSQL (a new schema) when DATABASE_URL is set, else the embedded database served over the
 * wire protocol. For outage tests of a service's whole stack (driver, pool, error path).
 */
export async function cuttableDatabase(service: string, env: NodeJS.ProcessEnv = process.env): Promise<CuttableDatabase> {
  const fresh = testDatabase(service, env);
  const embedded = fresh.config.url ? undefined : await startEmbeddedServer(fresh.config.schema);
  const target = new URL(fresh.config.url ?? embedded!.url);
  const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  const viaProxy = new URL(target);
  viaProxy.host = `127.0.0.1:${proxy.port}`;
  return {
    config: { url: viaProxy.toString(), schema: fresh.config.schema, poolMax: 2, connectTimeoutMs: 1000 },
    proxy,
    async close() {
      await proxy.close();
      await embedded?.stop();
      await fresh.cleanup();
    },
  };
}
