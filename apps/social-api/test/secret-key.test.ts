/**
 * SECRET_KEY has no default in any mode: unset, the service signs tokens and cookies with a random
 * key its migrations made in its own schema (PostgreSQL's strong random source), which every
 * replica shares and restarts keep. A key that is set wins. The key is read at start, or, when the
 * database cannot give it then (away, or not migrated yet), by the first requests, which answer 503
 * until it can.
 */
import type { FastifyInstance } from 'fastify';
import { KNOWN_SECRETS, productionSecretProblem } from '@platform/http-kit';
import { createSecretsRepository, migrateToLatest } from '@platform/db';
import { cuttableDatabase, type CuttableDatabase } from '@platform/db/testing';
import { waitUntilReady } from '@platform/testing';
import { randomBytes } from 'node:crypto';
import { buildApp } from '../src/app';
import { loadConfig } from '../src/config';
import { migrations } from '../src/db/migrations';
import { createJwt } from '../src/tokens/jwt';
import { basic, buildTestApp, registerThrough, type TestApp } from './support/app';
import { withFreshDatabase } from './support/database';

const QUIET = {
  LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
  ARGON2_MEMORY_KIB: '1024',
  ARGON2_TIME_COST: '1',
};

/** The token id inside an access JWT (its payload, unverified). */
const tokenIdOf = (jwt: string) =>
  JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()).token as string;

const meWith = (app: FastifyInstance, jwt: string) =>
  app.inject({ url: '/api/me', headers: { authorization: `Bearer ${jwt}` } });

describe('SECRET_KEY unset: the key the migrations made', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp();
  });
  afterAll(() => t?.close());

  test('is random (64 hex characters from gen_random_uuid), in the schema, not public, and what tokens are signed with', async () => {
    expect(t.config.secretKey).toBeUndefined();
    const stored = await createSecretsRepository(t.database.db).read('secret_key');
    expect(stored).toMatch(/^[0-9a-f]{64}$/);
    expect(t.app.secretKey.current()).toBe(stored);
    // Production would accept it as a SECRET_KEY: long enough, written nowhere.
    expect(productionSecretProblem(stored)).toBeUndefined();
    expect(KNOWN_SECRETS).not.toContain(stored);

    const user = await t.register();
    const tokenId = tokenIdOf(user.token);
    expect(createJwt(stored).accessToken(tokenId)).toBe(user.token);
    expect((await meWith(t.app, user.token)).statusCode).toBe(200);
    // The former development default (the Flask backend's 'top-secret!') and every other key
    // written in the repository sign nothing this service accepts.
    for (const known of KNOWN_SECRETS)
      expect((await meWith(t.app, createJwt(known).accessToken(tokenId))).statusCode).toBe(401);
  });

  test("is shared: another app over the same database (a replica, or this one restarted) accepts the first one's tokens, in production mode too; another database has its own", async () => {
    const user = await t.register();
    for (const mode of ['development', 'production'] as const) {
      const replica = await buildTestApp({ NODE_ENV: mode }, { over: t });
      try {
        expect(replica.config.mode).toBe(mode);
        expect(replica.app.secretKey.current()).toBe(t.app.secretKey.current());
        expect((await meWith(replica.app, user.token)).statusCode).toBe(200);
      } finally {
        await replica.close();
      }
    }
    const elsewhere = await buildTestApp();
    try {
      expect(elsewhere.app.secretKey.current()).not.toBe(t.app.secretKey.current());
      const stranger = await elsewhere.register({ username: user.username, password: user.password });
      expect((await meWith(t.app, stranger.token)).statusCode).toBe(401);
    } finally {
      await elsewhere.close();
    }
  });

  test('a SECRET_KEY that is set wins: the database key then signs nothing the app accepts', async () => {
    const secret = randomBytes(32).toString('hex');
    const own = await buildTestApp({ SECRET_KEY: secret }, { over: t });
    try {
      expect(own.app.secretKey.current()).toBe(secret);
      const user = await own.register();
      const tokenId = tokenIdOf(user.token);
      expect(createJwt(secret).accessToken(tokenId)).toBe(user.token);
      const databaseKey = await createSecretsRepository(t.database.db).read('secret_key');
      expect((await meWith(own.app, createJwt(databaseKey).accessToken(tokenId))).statusCode).toBe(401);
    } finally {
      await own.close();
    }
  });
});

describe('the key when the database cannot give it at start', () => {
  let app: FastifyInstance | undefined;

  test('database away at start: the app starts not ready, its routes answer 503, then read the key once it is back', async () => {
    const outage: CuttableDatabase = await cuttableDatabase('social');
    try {
      outage.proxy.cut();
      const config = loadConfig(QUIET);
      config.database = outage.config;
      app = await buildApp(config);
      await app.ready();
      expect((await app.inject('/healthz')).statusCode).toBe(200);
      const early = await app.inject({
        method: 'POST',
        url: '/api/tokens',
        headers: { authorization: basic('susan', 'cat') },
      });
      expect(early.statusCode).toBe(503);
      expect(early.json()).toMatchObject({ code: 503 });
      expect(() => app!.secretKey.current()).toThrow();

      outage.proxy.restore();
      expect(await waitUntilReady(app)).toBe(true);
      const { token } = await registerThrough(app, 'susan', 'cat');
      expect((await meWith(app, token)).statusCode).toBe(200);
      const stored = app.secretKey.current();
      expect(stored).toMatch(/^[0-9a-f]{64}$/);
      expect(createJwt(stored).accessToken(tokenIdOf(token))).toBe(token);
    } finally {
      await app?.close();
      app = undefined;
      await outage.close();
    }
  });

  test('MIGRATE_ON_START=false before the migrations ran: 503 until another process migrates, then the key they made', async () => {
    await withFreshDatabase(async (migrator, databaseConfig) => {
      try {
        const config = loadConfig({ ...QUIET, MIGRATE_ON_START: 'false' });
        config.database = databaseConfig;
        app = await buildApp(config);
        await app.ready();
        const early = await app.inject({ method: 'POST', url: '/api/users', payload: { username: 'john' } });
        expect(early.statusCode).toBe(503);

        await migrateToLatest(migrator.db, migrator.schema, migrations);
        expect(await waitUntilReady(app)).toBe(true);
        const { token } = await registerThrough(app, 'john', 'cat');
        const stored = await createSecretsRepository(migrator.db).read('secret_key');
        expect(app.secretKey.current()).toBe(stored);
        expect(createJwt(stored).accessToken(tokenIdOf(token))).toBe(token);
      } finally {
        await app?.close();
        app = undefined;
      }
    });
  });
});
