/**
 * The test kit keeps its promises to the services' tests: the test app is the service's own factory
 * over a fresh schema of a real PostgreSQL, and is gone after `close`; the dialect app answers in the
 * dialect it is given; raw exchanges read what a real socket received; readiness waits and gives up.
 */
import Fastify from 'fastify';
import { sql } from 'kysely';
import { openDatabase, type Database, type DatabaseConfig } from '@platform/db';
import { testDatabase } from '@platform/db/testing';
import {
  buildTestApp,
  childProcessEnv,
  dialectTestApp,
  INVALID_THING,
  openForTheseTests,
  parseRawResponse,
  postThing,
  rawExchange,
  waitUntilReady,
} from '../src';
import { kitDialect as dialect } from './support/dialect';

describe('buildTestApp', () => {
  interface Config {
    logLevel: string;
    database: DatabaseConfig;
  }
  type Deps = { database?: Database<{ notes: { id: number } }> };

  test('builds the service with its factory over a fresh schema, records its statements, drops the schema on close', async () => {
    let built: Config | undefined;
    const testApp = await buildTestApp<Config, Deps>({
      service: 'kit',
      loadConfig: (env) => ({ logLevel: env.LOG_LEVEL, database: testDatabase('unused').config }),
      buildApp: async (config, deps) => {
        built = config;
        const app = Fastify();
        app.get('/count', async () => {
          const { rows } = await sql<{ n: number }>`select 1::int as n`.execute(deps.database!.db);
          return rows[0];
        });
        return app;
      },
    });
    const schema = testApp.config.database.schema;
    try {
      expect(built).toBe(testApp.config);
      expect(testApp.config.logLevel).toBe(process.env.TEST_LOG_LEVEL ?? 'silent');
      expect((await testApp.app.inject('/count')).json()).toEqual({ n: 1 });
      expect(testApp.queries).toEqual(['select 1::int as n']);
      // What a service's migrations would do first: the schema exists until `close`.
      await sql`create schema ${sql.id(schema)}`.execute(testApp.database.db);
    } finally {
      await testApp.close();
    }
    const check = await openDatabase({ ...testApp.config.database, schema: 'public' });
    try {
      const { rows } = await sql<{ n: number }>`
        select count(*)::int as n from information_schema.schemata where schema_name = ${schema}
      `.execute(check.db);
      expect(rows[0].n).toBe(0);
    } finally {
      await check.close();
    }
  });
});

describe('dialectTestApp', () => {
  const app = openForTheseTests(() => dialectTestApp(dialect));

  test('answers an invalid body in the dialect it is given, naming each field', async () => {
    const response = await postThing(app(), INVALID_THING.payload);
    expect(response.statusCode).toBe(400);
    expect(response.headers['content-type']).toBe(dialect.contentType);
    expect(response.json().fields).toEqual(expect.arrayContaining(INVALID_THING.fields));
  });

  test('rawExchange sends bytes on a real socket and parseRawResponse reads the answer', async () => {
    await app().listen({ port: 0, host: '127.0.0.1' });
    const { port } = app().server.address() as { port: number };
    const { closed } = rawExchange(port, 'GET /things/7 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    const response = parseRawResponse(await closed);
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(JSON.parse(response.body)).toEqual({ id: '7' });
  });
});

describe('waitUntilReady', () => {
  test('is true once /readyz answers 200, false when it never does in time', async () => {
    let ready = false;
    const app = Fastify();
    app.get('/readyz', async (_request, reply) => reply.status(ready ? 200 : 503).send());
    try {
      expect(await waitUntilReady(app, 300)).toBe(false);
      setTimeout(() => (ready = true), 250);
      expect(await waitUntilReady(app, 5_000)).toBe(true);
    } finally {
      await app.close();
    }
  });
});

test("childProcessEnv points a service's process at the test schema, without Jest's NODE_OPTIONS", () => {
  const env = childProcessEnv({ url: 'postgres://db/test', schema: 'kit_1' }, { LOG_LEVEL: 'warn' });
  expect(env).toMatchObject({
    DATABASE_URL: 'postgres://db/test',
    DB_SCHEMA: 'kit_1',
    LOG_LEVEL: 'warn',
  });
  // Only the responses' proof is loaded into the child (tsx, then the preload), none of Jest's flags.
  expect(env.NODE_OPTIONS).toMatch(
    /^--import file:\/\/\S+\/tsx\/dist\/loader\.mjs --import file:\/\/\S+\/documents\/child-preload\.mjs$/,
  );
  expect(env.PROVEN_RESPONSES_CHILD_LOG).toMatch(/proven-responses-\d+-[0-9a-f-]+\.jsonl$/);
  expect(env.PATH).toBe(process.env.PATH);
});
