import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import * as testing from '@platform/http-kit/testing';
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

export interface TestApp extends testing.TestApp<Config, SocialDatabase> {
  clock: TestClock;
  /** Registers a user through the API and logs them in (username `user<n>` unless given). */
  register(
    fields?: Partial<Pick<TestUser, 'username' | 'email' | 'password'>> & { about_me?: string | null },
  ): Promise<TestUser>;
  /** `POST /api/tokens` with Basic credentials. */
  login(name: string, password: string): Promise<LightMyRequestResponse>;
  /** A request with `Authorization: Bearer <token>` (when a token is given). */
  as(token: string | null, options: InjectOptions): Promise<LightMyRequestResponse>;
}

export const basic = (name: string, password: string) =>
  `Basic ${Buffer.from(`${name}:${password}`).toString('base64')}`;

/**
 * The real app over a fresh schema (see `buildTestApp` of http-kit), with cheap argon2 parameters and
 * a movable clock. Auth is on (the Flask tests turn DISABLE_AUTH on; ours exercise real tokens
 * everywhere).
 */
export async function buildTestApp(env: Record<string, string> = {}): Promise<TestApp> {
  let offset = 0;
  const clock: TestClock = { now: () => new Date(Date.now() + offset), advance: (ms) => void (offset += ms) };
  const base = await testing.buildTestApp({
    service: 'social',
    loadConfig,
    buildApp,
    env: { ARGON2_MEMORY_KIB: '1024', ARGON2_TIME_COST: '1', ...env },
    dependencies: { clock: clock.now },
  });
  const { app } = base;
  let n = 0;
  const login: TestApp['login'] = (name, password) =>
    app.inject({ method: 'POST', url: '/api/tokens', headers: { authorization: basic(name, password) } });
  return {
    ...base,
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
  };
}
