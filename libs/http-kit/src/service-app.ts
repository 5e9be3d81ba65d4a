import Fastify, { type FastifyInstance } from 'fastify';
import { isDatabaseUnavailable, type Database, type Migration } from '@platform/db';
import type { ServiceConfig } from './config';
import { databasePlugin } from './database';
import type { ErrorDialect } from './dialects';
import { platform, type PlatformOptions } from './platform';
import { rateLimitStore } from './rate-limit';
import type { RequestRulesOptions } from './request-rules';
import { serverOptions } from './server-options';

export interface ServiceAppOptions {
  /** The service's configuration, decorated as `app.config` (each service declares its own type). */
  config: ServiceConfig;
  /** Largest accepted request body, in bytes. */
  bodyLimit: number;
  /** The service's error wire format (its `errors.ts`). */
  dialect: ErrorDialect;
  /** How the service reads request bodies. */
  requestRules: RequestRulesOptions;
  docs: PlatformOptions['docs'];
  cors: PlatformOptions['cors'];
  /** Fixed detail for unknown paths (default: names the method and path). */
  notFoundDetail?: string;
  /** Credential headers of its own (beyond Authorization and Cookie) that logs must never show. */
  secretHeaders?: string[];
  /** The service's migrations (its static index), run on start when `config.migrateOnStart`. */
  migrations: Record<string, Migration>;
  /** An already-open database (tests); the app then leaves closing it to the caller. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any service's tables
  database?: Database<any>;
}

/**
 * What every service's `buildApp` starts with: a Fastify instance (not listening) with the server
 * options production and tests share, `app.config`, the platform (error path in the service's dialect,
 * request rules, docs, CORS, security headers, metrics, health), the service's database (503s when
 * it is unreachable; readiness pings it) and the rate-limit store (Redis when `REDIS_URL`). The service then registers its own plugins and routes.
 */
export async function createServiceApp(options: ServiceAppOptions): Promise<FastifyInstance> {
  const { config } = options;
  const app = Fastify(
    serverOptions({
      logLevel: config.logLevel,
      logFormat: config.logFormat,
      bodyLimit: options.bodyLimit,
      trustProxy: config.trustProxy,
      maxConnectionsPerAddress: config.maxConnectionsPerAddress,
      secretHeaders: options.secretHeaders,
      dialect: options.dialect,
    }),
  );
  // Typed by the service's own `FastifyInstance.config` declaration.
  app.decorate('config', config as never);

  await app.register(platform, {
    dialect: options.dialect,
    requestRules: options.requestRules,
    isUnavailable: isDatabaseUnavailable,
    // The database is decorated by `databasePlugin` below, before the app serves any request.
    readiness: () => (app as unknown as { database: Database<unknown> }).database.ping(),
    bodyLimit: options.bodyLimit,
    notFoundDetail: options.notFoundDetail,
    docs: options.docs,
    cors: options.cors,
    metricsToken: config.metricsToken,
    logFormat: config.logFormat,
  });
  await app.register(databasePlugin, {
    config: config.database,
    migrateOnStart: config.migrateOnStart,
    migrations: options.migrations,
    database: options.database,
  });
  // No limit of its own: each service declares its limits with app.rateLimit / app.createRateLimit.
  await app.register(rateLimitStore, { redisUrl: config.redisUrl, namespace: options.docs.title });
  return app;
}
