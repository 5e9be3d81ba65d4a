import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { openDatabase, type Database } from '@platform/db';
import { testDatabase } from '@platform/db/testing';
import { buildApp } from '../../src/app';
import { loadConfig, type Config } from '../../src/config';
import type { SocialDatabase } from '../../src/db/schema';

/** A clock tests move forward to expire tokens without waiting. */
export interface TestClock {
  now(): Date;
  advance(ms: number): void;
}

export interface TestUser {
  id: number;
  username: string;
  email: string;
  password: string;
  /** A bearer access token of this user. */
  token: string;
}

export interface TestApp {
  app: FastifyInstance;
  config: Config;
  database: Database<SocialDatabase>;
  clock: TestClock;
  /** Registers a user through the API and logs them in (username `user<n>` unless given). */
  register(
    fields?: Partial<Pick<TestUser, 'username' | 'email' | 'password'>> & { about_me?: string | null },
  ): Promise<TestUser>;
  /** `POST /api/tokens` with Basic credentials. */
  login(name: string, password: string): Promise<LightMyRequestResponse>;
  /** A request with `Authorization: Bearer <token>` (when a token is given). */
  as(token: string | null, options: InjectOptions): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export const basic = (name: string, password: string) =>
  `Basic ${Buffer.from(`${name}:${password}`).toString('base64')}`;

/**
 * The real app, built by the production factory with production server options, over a fresh
 * database (a new schema of the test PostgreSQL: DATABASE_URL, or the local server Jest's global
 * setup provides), with cheap argon2 parameters and a movable clock. Auth is on (the Flask tests turn
 * DISABLE_AUTH on; ours exercise real tokens everywhere).
 */
export async function buildTestApp(env: Record<string, string> = {}): Promise<TestApp> {
  const fresh = testDatabase('social');
  const config = loadConfig({
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ARGON2_MEMORY_KIB: '1024',
    ARGON2_TIME_COST: '1',
    ...env,
  });
  config.database = { ...fresh.config };
  const database = await openDatabase<SocialDatabase>(config.database);
  let offset = 0;
  const clock: TestClock = { now: () => new Date(Date.now() + offset), advance: (ms) => void (offset += ms) };
  const app = await buildApp(config, { database, clock: clock.now });
  await app.ready();
  let n = 0;
  const login: TestApp['login'] = (name, password) =>
    app.inject({ method: 'POST', url: '/api/tokens', headers: { authorization: basic(name, password) } });
  return {
    app,
    config,
    database,
    clock,
    login,
    async register(fields = {}) {
      n += 1;
      const username = fields.username ?? `user${n}`;
      const email = fields.email ?? `${username}@example.com`;
      const password = fields.password ?? 'password';
      const created = await app.inject({
        method: 'POST',
        url: '/api/users',
        payload: {
          username,
          email,
          password,
          ...(fields.about_me !== undefined ? { about_me: fields.about_me } : {}),
        },
      });
      if (created.statusCode !== 201)
        throw new Error(`registration failed: ${created.statusCode} ${created.body}`);
      const tokens = await login(username, password);
      if (tokens.statusCode !== 200) throw new Error(`login failed: ${tokens.statusCode} ${tokens.body}`);
      return { id: created.json().id, username, email, password, token: tokens.json().access_token };
    },
    as: (token, options) =>
      app.inject({
        ...options,
        headers: { ...(options.headers ?? {}), ...(token ? { authorization: `Bearer ${token}` } : {}) },
      }),
    async close() {
      await app.close();
      await database.close();
      await fresh.cleanup();
    },
  };
}
