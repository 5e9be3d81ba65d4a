import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import * as testing from '@platform/testing';
import { buildApp } from '../../src/app';
import { loadConfig, type Config } from '../../src/config';
import type { SocialDatabase, UserRow } from '../../src/db/schema';

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

/** The app, its database and its clock, before the helpers that speak to it. */
type BareTestApp = testing.TestApp<Config, SocialDatabase> & { clock: TestClock };

export interface TestApp extends BareTestApp {
  /** Registers a user through the API and logs them in (username `user<n>` unless given). */
  register(
    fields?: Partial<Pick<TestUser, 'username' | 'email' | 'password'>> & { about_me?: string | null },
  ): Promise<TestUser>;
  /** Registers a user of each username, one after the other (so their ids follow this order). */
  registerEach(...usernames: string[]): Promise<TestUser[]>;
  /** `POST /api/tokens` with Basic credentials. */
  login(name: string, password: string): Promise<LightMyRequestResponse>;
  /** A request with `Authorization: Bearer <token>` (when a token is given). */
  as(token: string | null, options: InjectOptions): Promise<LightMyRequestResponse>;
  /** A user's row as stored, with what the API never shows (the password hash). */
  storedUser(id: number): Promise<UserRow>;
  /** How many rows `table` holds: all of them, or those `where` keeps. */
  countRows(table: keyof SocialDatabase, where?: (query: any) => any): Promise<number>;
}

export interface TestAppOptions {
  /**
   * Another configuration of the real app over this test app's database and clock instead of a
   * fresh schema, so it costs only an app build; closing it leaves the database to `over`.
   */
  over?: TestApp;
}

export const basic = (name: string, password: string) =>
  `Basic ${Buffer.from(`${name}:${password}`).toString('base64')}`;

/**
 * Registers `username` (address `<username>@example.com`) through an app a test built itself and
 * logs them in, expecting 201 then 200: their id and access token. (A TestApp has `register`.)
 */
export async function registerThrough(
  app: FastifyInstance,
  username: string,
  password = 'password',
): Promise<{ id: number; token: string }> {
  const created = await app.inject({
    method: 'POST',
    url: '/api/users',
    payload: { username, email: `${username}@example.com`, password },
  });
  expect(created.statusCode).toBe(201);
  const login = await app.inject({
    method: 'POST',
    url: '/api/tokens',
    headers: { authorization: basic(username, password) },
  });
  expect(login.statusCode).toBe(200);
  return { id: created.json().id, token: login.json().access_token };
}

/**
 * Cheap argon2 parameters (hashing stays real, only faster) and limits no ordinary test reaches (the
 * limit tests set their own).
 */
const CHEAP_ARGON2 = {
  ARGON2_MEMORY_KIB: '1024',
  ARGON2_TIME_COST: '1',
  LOGIN_FAILURES_PER_ADDRESS: '100000',
  LOGIN_FAILURES_PER_ACCOUNT: '100000',
  LOGIN_FAILURES_PER_ACCOUNT_ANYWHERE: '100000',
  REGISTRATIONS_PER_ADDRESS: '100000',
  RESETS_PER_ADDRESS: '100000',
  RESETS_PER_EMAIL: '100000',
};

/** The `n` of default usernames: counted per test file, so apps over one database never collide. */
let registered = 0;

/**
 * The real app over a fresh schema (see `buildTestApp` of http-kit), or over `options.over`'s,
 * with cheap argon2 parameters and a movable clock. Auth is on (the Flask tests turn DISABLE_AUTH
 * on; ours exercise real tokens everywhere).
 */
export async function buildTestApp(
  env: Record<string, string> = {},
  options: TestAppOptions = {},
): Promise<TestApp> {
  const bare = options.over ? await appOver(options.over, env) : await freshApp(env);
  return withHelpers(bare);
}

async function freshApp(env: Record<string, string>): Promise<BareTestApp> {
  let offset = 0;
  const clock: TestClock = { now: () => new Date(Date.now() + offset), advance: (ms) => void (offset += ms) };
  const base = await testing.buildTestApp({
    service: 'social',
    loadConfig,
    buildApp,
    env: { ...CHEAP_ARGON2, ...env },
    dependencies: { clock: clock.now },
  });
  return { ...base, clock };
}

/** The real app configured by `env` (as http-kit's `buildTestApp` reads it), over `over`'s database and clock. */
async function appOver(over: TestApp, env: Record<string, string>): Promise<BareTestApp> {
  const config = loadConfig({ LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent', ...CHEAP_ARGON2, ...env });
  config.database = over.config.database;
  const app = await buildApp(config, { database: over.database, clock: over.clock.now });
  await app.ready();
  const { database, queries, statements, clock } = over;
  return { app, config, database, queries, statements, clock, close: () => app.close() };
}

function withHelpers(bare: BareTestApp): TestApp {
  const { app, database } = bare;
  const login: TestApp['login'] = (name, password) =>
    app.inject({ method: 'POST', url: '/api/tokens', headers: { authorization: basic(name, password) } });
  const register: TestApp['register'] = async (fields = {}) => {
    registered += 1;
    const username = fields.username ?? `user${registered}`;
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
  };
  return {
    ...bare,
    login,
    register,
    async registerEach(...usernames) {
      const users: TestUser[] = [];
      for (const username of usernames) users.push(await register({ username }));
      return users;
    },
    as: (token, options) =>
      app.inject({
        ...options,
        headers: { ...(options.headers ?? {}), ...(token ? { authorization: `Bearer ${token}` } : {}) },
      }),
    storedUser: (id) =>
      database.db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirstOrThrow(),
    async countRows(table, where = (query) => query) {
      const all = database.db.selectFrom(table).select((eb) => eb.fn.countAll<string>().as('n'));
      return Number((await where(all).executeTakeFirstOrThrow()).n);
    },
  };
}
