import { Type } from '@sinclair/typebox';
import { EnvFlag, parseEnv } from '@platform/schema';
import { serviceConfig, serviceEnv } from '../src';

describe('service configuration', () => {
  const schema = Type.Object({ ...serviceEnv({ port: 1234, schema: 'svc' }), EXTRA: EnvFlag(false) });

  test('defaults: the local PostgreSQL server, migrations on, any origin, JSON logs', () => {
    expect(serviceConfig(parseEnv(schema, {}))).toEqual({
      port: 1234,
      host: '127.0.0.1',
      database: {
        url: undefined,
        dataDir: '',
        localPort: 54329,
        schema: 'svc',
        poolMax: 10,
        statementTimeoutMs: 10_000,
      },
      migrateOnStart: true,
      shutdownDrainMs: 0,
      corsOrigins: '*',
      trustProxy: false,
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
      database: { url: 'postgres://h/db', schema: 'other', statementTimeoutMs: 2500 },
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

  test('a bad flag or schema name refuses to start', () => {
    expect(() => parseEnv(schema, { EXTRA: 'maybe' })).toThrow(/EXTRA/);
    expect(() => parseEnv(schema, { DB_SCHEMA: 'Bad-Name' })).toThrow(/DB_SCHEMA/);
  });
});
