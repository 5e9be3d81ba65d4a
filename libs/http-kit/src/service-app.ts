import Fastify, { type FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { isDatabaseUnavailable, type Database, type Migration } from '@platform/db';
import type { ServiceConfig } from './config';
import type { ErrorDialect } from './dialects';
import { corsPlugin, type CorsOptions } from './plugins/external/cors';
import { helmetPlugin } from './plugins/external/helmet';
import { metricsPlugin } from './plugins/external/metrics';
import { rateLimitStore } from './plugins/external/rate-limit';
import { swaggerPlugin, type DocsOptions } from './plugins/external/swagger';
import { chunkedFraming } from './plugins/app/chunked-framing';
import { databasePlugin } from './plugins/app/database';
import { defaultErrorResponses, errorHandling } from './plugins/app/error-handling';
import { health } from './plugins/app/health';
import { requestId } from './plugins/app/request-id';
import { requestRules, type RequestRulesOptions } from './plugins/app/request-rules';
import { routeMetrics } from './plugins/app/route-metrics';
import { shutdown } from './plugins/app/shutdown';
import { serverOptions } from './server-options';

export interface PlatformOptions {
  /** The service's error wire format; its schemas are registered for `$ref`s and the OpenAPI document. */
  dialect: ErrorDialect;
  /** How the service reads request bodies, stated in full by each service. */
  requestRules: RequestRulesOptions;
  /** Classifies errors meaning "the database is down" (503). */
  isUnavailable?: (error: unknown) => boolean;
  /** Resolves when the service can serve traffic (database reachable); rejects otherwise. */
  readiness: () => Promise<void>;
  bodyLimit: number;
  /** Fixed detail for unknown paths (default: names the method and path). */
  notFoundDetail?: string;
  docs: DocsOptions;
  /** When set, /metrics requires `Authorization: Bearer <metricsToken>` (401 otherwise). */
  metricsToken?: string;
  /**
   * The logs' format, as given to `serverOptions`: `pretty` puts why a request was refused on its one
   * request line (`OneLinePerRequest`), `json` logs a `request rejected` entry.
   */
  logFormat?: 'json' | 'pretty';
  cors: CorsOptions;
}

/**
 * Everything every service has before its database and its own routes, one plugin per concern, in
 * the order their hooks run: the error path in the service's dialect, its request rules, the drain,
 * OpenAPI docs (Swagger UI at /docs), CORS, security headers, chunked framing, request ids,
 * Prometheus metrics with per-route latency, liveness and readiness.
 */
export const platform = fp(
  async function platform(app: FastifyInstance, options: PlatformOptions) {
    await app.register(errorHandling, {
      dialect: options.dialect,
      isUnavailable: options.isUnavailable,
      bodyLimit: options.bodyLimit,
      notFoundDetail: options.notFoundDetail,
      logFormat: options.logFormat,
    });
    await app.register(requestRules, options.requestRules);
    await app.register(shutdown);
    await app.register(swaggerPlugin, options.docs);
    await app.register(corsPlugin, options.cors);
    await app.register(helmetPlugin);
    await app.register(chunkedFraming);
    await app.register(requestId);
    await app.register(metricsPlugin, { metricsToken: options.metricsToken });
    await app.register(routeMetrics, { register: app.metrics.client.register });
    await app.register(health, { readiness: options.readiness });
  },
  { name: '@platform/platform', fastify: '5.x' },
);

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
 * options production and tests share, `app.config`, the platform (above), the service's database
 * (503s when it is unreachable; readiness pings it), the rate-limit store (Redis when `REDIS_URL`)
 * and the error statuses every route of the service can meet (500, 503), declared once. The service
 * then registers its own plugins and routes.
 */
export async function createServiceApp(options: ServiceAppOptions): Promise<FastifyInstance> {
  const { config } = options;
  const app = Fastify(
    serverOptions({
      logLevel: config.logLevel,
      logFormat: config.logFormat,
      bodyLimit: options.bodyLimit,
      trustProxy: config.trustProxy,
      maxConnections: config.maxConnections,
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
  // Every route the service registers from here on can fail unexpectedly (500) or meet its database
  // away (503): declared once here instead of in each route's schema.
  await app.register(defaultErrorResponses, { statuses: [500, 503] });
  return app;
}
