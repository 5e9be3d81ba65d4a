export * from './tcp-proxy';
export * from './embedded-server';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { assertSchemaName, type DatabaseConfig } from '../connection';

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
