import { randomBytes } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { EnvFlag, parseEnv } from '@platform/schema';
import { serviceConfig, serviceEnv } from '../src';

describe('service configuration', () => {
  const schema = Type.Object({ ...serviceEnv({ port: 1234, schema: 'svc' }), EXTRA: EnvFlag(false) });

  test('defaults: the local PostgreSQL server, migrations on, any origin, JSON logs', () => {
    expect(serviceConfig(parseEnv(schema, {}))).toEqual({
      mode: 'development',
      port: 1234,
      host: '127.0.0.1',
      database: {
        url: undefined,
        dataDir: '',
        localPort: 54329,
        schema: 'svc',
        poolMax: 10,
        statementTimeoutMs: 10_000,
        preparedStatements: true,
      },
      migrateOnStart: true,
      shutdownDrainMs: 0,
      corsOrigins: '*',
      trustProxy: false,
      maxConnections: 4096,
      maxConnectionsPerAddress: 256,
      logLevel: 'info',
      logFormat: 'json',
      metricsToken: undefined,
      redisUrl: undefined,
    });
  });

  test('values from the environment', () => {
    const config = serviceConfig(
      parseEnv(schema, {
        PORT: '80',
        DATABASE_URL: 'postgres://h/db',
        DB_SCHEMA: 'other',
        DB_STATEMENT_TIMEOUT_MS: '2500',
        DB_PREPARED_STATEMENTS: 'false',
        MIGRATE_ON_START: 'no',
        CORS_ORIGINS: 'http://a, http://b',
        TRUST_PROXY: '10.0.0.0/8',
        LOG_FORMAT: 'pretty',
        SHUTDOWN_DRAIN_MS: '3000',
        REDIS_URL: 'redis://cache:6379/1',
        MAX_CONNECTIONS_PER_ADDRESS: '0',
      }),
    );
    expect(config).toMatchObject({
      shutdownDrainMs: 3000,
      redisUrl: 'redis://cache:6379/1',
      port: 80,
      database: {
        url: 'postgres://h/db',
        schema: 'other',
        statementTimeoutMs: 2500,
        preparedStatements: false,
      },
      migrateOnStart: false,
      corsOrigins: ['http://a', 'http://b'],
      trustProxy: '10.0.0.0/8',
      logFormat: 'pretty',
      maxConnectionsPerAddress: 0,
    });
  });

  test.each([
    ['yes', true],
    ['on', true],
    ['1', true],
    ['true', true],
    ['no', false],
    ['off', false],
    ['0', false],
    ['false', false],
    ['YES', true],
    [' On ', true],
    ['TRUE', true],
    ['Off', false], // any case, as the Flask backend reads them
    ['', false], // empty means the default
  ])('flag %p is %p', (text, expected) => {
    const flag: boolean = parseEnv(schema, { EXTRA: text }).EXTRA; // typed boolean, not text
    expect(flag).toBe(expected);
  });

  test('NODE_ENV is the mode, development by default; anything else refuses to start', () => {
    for (const mode of ['development', 'production', 'test'] as const)
      expect(serviceConfig(parseEnv(schema, { NODE_ENV: mode })).mode).toBe(mode);
    expect(serviceConfig(parseEnv(schema, { NODE_ENV: '' })).mode).toBe('development');
    expect(() => parseEnv(schema, { NODE_ENV: 'staging' })).toThrow(/NODE_ENV/);
  });

  test("production refuses a DATABASE_URL whose password is known or short on a server others reach; a private server's passes", () => {
    const read = (env: Record<string, string>) => serviceConfig(parseEnv(schema, env));
    const production = (url: string) => read({ NODE_ENV: 'production', DATABASE_URL: url });
    for (const url of [
      'postgres://u:platform-local@db.example.com/x', // compose's local-only default, on a public host
      'postgres://u:short@10.0.0.7:5432/x',
    ])
      expect(() => production(url)).toThrow(/^invalid configuration:\n {2}DATABASE_URL: its password/);
    for (const url of [
      'postgres://u:platform-local@postgres/x', // compose: the database is never published
      'postgres://u:platform-local@127.0.0.1:5432/x',
      `postgres://u:${randomBytes(32).toString('hex')}@db.example.com/x`, // an operator's own
      'postgres://u@db.example.com/x', // no password: trust, a certificate or .pgpass
    ])
      expect(production(url).database.url).toBe(url);
    // Development and tests take any setup.
    for (const mode of ['development', 'test'])
      expect(
        read({ NODE_ENV: mode, DATABASE_URL: 'postgres://u:platform-local@db.example.com/x' }).mode,
      ).toBe(mode);
  });

  test('a bad flag or schema name refuses to start', () => {
    expect(() => parseEnv(schema, { EXTRA: 'maybe' })).toThrow(/EXTRA/);
    expect(() => parseEnv(schema, { DB_SCHEMA: 'Bad-Name' })).toThrow(/DB_SCHEMA/);
  });
});
