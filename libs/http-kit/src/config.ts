import { Type, type Static, type TObject } from '@sinclair/typebox';
import { DEFAULT_LOCAL_PG_PORT, DEFAULT_STATEMENT_TIMEOUT_MS, type DatabaseConfig } from '@platform/db';
import { EnvFlag } from '@platform/schema';
import { MAX_CONNECTIONS, MAX_CONNECTIONS_PER_ADDRESS } from './server-options';
import { databasePasswordProblem } from './secrets';

/** NODE_ENV: production is what the images run; a service adds its own refusals to the shared ones. */
export const SERVICE_MODES = ['development', 'production', 'test'] as const;
export type ServiceMode = (typeof SERVICE_MODES)[number];

/**
 * The environment every service reads, with its own defaults; a service spreads these properties
 * into its schema next to its own variables.
 */
export function serviceEnv(defaults: { port: number; schema: string }) {
  return {
    NODE_ENV: Type.Union(
      SERVICE_MODES.map((mode) => Type.Literal(mode)),
      {
        default: 'development',
        description:
          "production (the images set it): refuses a DATABASE_URL whose password is short or written in this repository unless the server is private (loopback or a single-label host such as compose's `postgres`), and what the service itself refuses",
      },
    ),
    PORT: Type.Integer({ minimum: 0, maximum: 65535, default: defaults.port }),
    HOST: Type.String({ default: '127.0.0.1', description: 'Use 0.0.0.0 in containers' }),
    DATABASE_URL: Type.Optional(
      Type.String({
        description: 'PostgreSQL connection string; unset: the local PostgreSQL server of DATA_DIR',
      }),
    ),
    DATA_DIR: Type.String({
      default: '',
      description:
        'Local PostgreSQL data directory (unset: <root>/.data/postgres; relative: from the repository root)',
    }),
    LOCAL_PG_PORT: Type.Integer({
      minimum: 1,
      maximum: 65535,
      default: DEFAULT_LOCAL_PG_PORT,
      description: 'Port of the local PostgreSQL server when a process starts it',
    }),
    DB_SCHEMA: Type.String({ default: defaults.schema, pattern: '^[a-z_][a-z0-9_]*$' }),
    DB_POOL_MAX: Type.Integer({ minimum: 1, default: 10 }),
    DB_STATEMENT_TIMEOUT_MS: Type.Integer({
      minimum: 0,
      default: DEFAULT_STATEMENT_TIMEOUT_MS,
      description:
        'Longest a statement may run before it is cancelled (a 503); the client gives up 5 s later. 0 = no limit',
    }),
    DB_PREPARED_STATEMENTS: EnvFlag(
      true,
      'Hot statements as named prepared statements, parsed once per connection; false behind a pooler in transaction mode that cannot keep them (PgBouncer before 1.21 or without max_prepared_statements)',
    ),
    MIGRATE_ON_START: EnvFlag(true),
    SHUTDOWN_DRAIN_MS: Type.Integer({
      minimum: 0,
      maximum: 120_000,
      default: 0,
      description:
        'After SIGTERM, keep serving this long with /readyz answering 503 before closing (longer than the load balancer needs to see it); 0: close at once',
    }),
    CORS_ORIGINS: Type.String({ default: '*', description: '`*` or a comma-separated list of origins' }),
    TRUST_PROXY: Type.String({
      default: 'false',
      description: '`true`, `false`, or addresses/CIDRs of trusted proxies',
    }),
    MAX_CONNECTIONS: Type.Integer({
      minimum: 1,
      maximum: 1_000_000,
      default: MAX_CONNECTIONS,
      description:
        'Concurrent connections beyond which new ones are refused (event streams count: EVENTS_MAX_STREAMS must stay below it)',
    }),
    MAX_CONNECTIONS_PER_ADDRESS: Type.Integer({
      minimum: 0,
      maximum: 1_000_000,
      default: MAX_CONNECTIONS_PER_ADDRESS,
      description:
        'Open connections one client address may hold; one more is closed at once (0: no cap). Trusted proxies (TRUST_PROXY) are exempt',
    }),
    LOG_LEVEL: Type.Union(
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
      { default: 'info' },
    ),
    LOG_FORMAT: Type.Union([Type.Literal('json'), Type.Literal('pretty')], { default: 'json' }),
    REDIS_URL: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'Redis for rate-limit counters shared by every replica (redis://host:6379/0); unset: counters in this process',
      }),
    ),
    METRICS_TOKEN: Type.Optional(
      Type.String({
        minLength: 1,
        description: 'When set, /metrics requires `Authorization: Bearer <METRICS_TOKEN>`; unset: open',
      }),
    ),
  };
}

type ServiceEnv = Static<TObject<ReturnType<typeof serviceEnv>>>;

/** The part of a service's configuration every service has: what `serviceConfig` makes of `serviceEnv`. */
export type ServiceConfig = ReturnType<typeof serviceConfig>;

/**
 * The shared part of a service's configuration. Throws, as the services' own refusals do ("invalid
 * configuration:" then one line per variable), when production would connect with a password
 * anyone can read in this repository (see `databasePasswordProblem`).
 */
export function serviceConfig(e: ServiceEnv) {
  const mode = e.NODE_ENV as ServiceMode;
  const databaseProblem = mode === 'production' && e.DATABASE_URL && databasePasswordProblem(e.DATABASE_URL);
  if (databaseProblem) throw new Error(`invalid configuration:\n  DATABASE_URL: ${databaseProblem}`);
  const database: DatabaseConfig = {
    url: e.DATABASE_URL || undefined,
    dataDir: e.DATA_DIR,
    localPort: e.LOCAL_PG_PORT,
    schema: e.DB_SCHEMA,
    poolMax: e.DB_POOL_MAX,
    statementTimeoutMs: e.DB_STATEMENT_TIMEOUT_MS,
    preparedStatements: e.DB_PREPARED_STATEMENTS,
  };
  return {
    /** NODE_ENV. */
    mode,
    port: e.PORT,
    host: e.HOST,
    database,
    migrateOnStart: e.MIGRATE_ON_START,
    /** After SIGTERM: serving while not ready for this long, then closing. */
    shutdownDrainMs: e.SHUTDOWN_DRAIN_MS,
    corsOrigins:
      e.CORS_ORIGINS.trim() === '*'
        ? ('*' as const)
        : e.CORS_ORIGINS.split(',')
            .map((o) => o.trim())
            .filter(Boolean),
    trustProxy: e.TRUST_PROXY === 'true' ? true : e.TRUST_PROXY === 'false' ? false : e.TRUST_PROXY,
    /** Concurrent connections the server accepts. */
    maxConnections: e.MAX_CONNECTIONS,
    /** Open connections per client address (0: no cap); trusted proxies are exempt. */
    maxConnectionsPerAddress: e.MAX_CONNECTIONS_PER_ADDRESS,
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT === 'pretty' ? ('pretty' as const) : ('json' as const),
    /** Bearer token /metrics requires; unset: /metrics is open. */
    metricsToken: e.METRICS_TOKEN || undefined,
    /** Redis holding rate-limit counters shared by replicas; unset: each process counts alone. */
    redisUrl: e.REDIS_URL || undefined,
  };
}
