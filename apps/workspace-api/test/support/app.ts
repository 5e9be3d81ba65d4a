import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { openDatabase, type Database } from '@platform/db';
import { testDatabase } from '@platform/db/testing';
import { buildApp } from '../../src/app';
import { loadConfig, type Config } from '../../src/config';
import type { WorkspaceDatabase } from '../../src/db/schema';
import { createApiKeysRepository, type NewApiKey } from '../../src/auth/repository';
import type { Permission } from '../../src/auth/permissions';

export interface KeyPair {
  api_key: string;
  api_key_secret: string;
}

export interface TestApp {
  app: FastifyInstance;
  config: Config;
  database: Database<WorkspaceDatabase>;
  /** A Global Admin key created for this app. */
  admin: KeyPair;
  /** Creates another key (only its hash is stored, as in production). */
  createKey(
    permissions: Permission[],
    options?: Omit<NewApiKey, 'name' | 'permissions'> & { name?: string },
  ): Promise<KeyPair>;
  /** `POST /api/public/<operation>` with the key pair in the body (admin by default). */
  call(
    operation: string,
    body?: Record<string, unknown>,
    key?: KeyPair | null,
  ): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

/**
 * The real app, built by the production factory with production server options, over a fresh
 * database (a new schema of the test PostgreSQL: DATABASE_URL, or the local server Jest's global
 * setup provides), with cheap argon2 parameters.
 */
export async function buildTestApp(env: Record<string, string> = {}): Promise<TestApp> {
  const fresh = testDatabase('workspace');
  const config = loadConfig({
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ARGON2_MEMORY_KIB: '1024',
    ARGON2_TIME_COST: '1',
    ...env,
  });
  config.database = { ...fresh.config };
  const database = await openDatabase<WorkspaceDatabase>(config.database);
  const app = await buildApp(config, { database });
  await app.ready();
  const keys = createApiKeysRepository(database.db);
  const createKey: TestApp['createKey'] = async (permissions, options = {}) => {
    const created = await keys.create({
      name: options.name ?? `test ${permissions.join('+')}`,
      permissions,
      readOnly: options.readOnly,
      expires: options.expires,
    });
    return { api_key: created.apiKey, api_key_secret: created.secret };
  };
  const admin = await createKey(['Global Admin'], { name: 'test admin' });
  return {
    app,
    config,
    database,
    admin,
    createKey,
    call: (operation, body = {}, key = admin) =>
      app.inject({ method: 'POST', url: `/api/public/${operation}`, payload: { ...(key ?? {}), ...body } }),
    async close() {
      await app.close();
      await database.close();
      await fresh.cleanup();
    },
  };
}
