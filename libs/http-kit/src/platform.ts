import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import cors from '@fastify/cors';
import swagger, { type FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import metrics from 'fastify-metrics';
import { Type } from '@sinclair/typebox';
import { errorHandling } from './error-handling';
import { reasonPhrase, type ErrorDialect } from './dialects';
import { createError, ServiceUnavailableError, ShuttingDownError } from './errors';
import { requestRules, type RequestRulesOptions } from './request-rules';
import { routeMetrics } from './route-metrics';
import { SECURITY_HEADERS } from './security-headers';
import { closeConnectionsWhileDraining } from './shutdown';

export { headersOf, SECURITY_HEADERS } from './security-headers';

const MetricsUnauthorizedError = createError(
  'PLATFORM_METRICS_UNAUTHORIZED',
  'Metrics require a valid token: Authorization: Bearer <METRICS_TOKEN>',
  401,
);

/** Whether `authorization` is `Bearer <token>`, compared in constant time. */
function isBearer(authorization: string | undefined, token: string): boolean {
  const match = /^Bearer +(.+)$/i.exec(authorization ?? '');
  if (!match) return false;
  const given = createHash('sha256').update(match[1].trim()).digest();
  return timingSafeEqual(given, createHash('sha256').update(token).digest());
}

type OpenApiDocument = NonNullable<FastifyDynamicSwaggerOptions['openapi']>;

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
  docs: {
    title: string;
    description: string;
    version: string;
    tags: { name: string; description: string }[];
    /** Extra OpenAPI pieces, e.g. `components.securitySchemes`. */
    openapi?: Partial<OpenApiDocument>;
  };
  /** When set, /metrics requires `Authorization: Bearer <metricsToken>` (401 otherwise). */
  metricsToken?: string;
  /**
   * The logs' format, as given to `serverOptions`: `pretty` puts why a request was refused on its one
   * request line (`OneLinePerRequest`), `json` logs a `request rejected` entry.
   */
  logFormat?: 'json' | 'pretty';
  cors: {
    /** `'*'` for any origin, `'reflect'` to echo any origin back (with credentials), or a list of allowed origins (empty: CORS off, no CORS header at all). */
    origins: '*' | 'reflect' | string[];
    credentials?: boolean;
    exposedHeaders?: string[];
    /** Default: content-type, authorization, x-request-id; `'reflect'` allows whatever a preflight asks for. */
    allowedHeaders?: string[] | 'reflect';
    methods?: string[];
  };
}

const DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid request: malformed JSON, wrong types or values that break a rule',
  401: 'Missing or invalid credentials',
  403: 'Not permitted',
  404: 'Nothing found under this id or path',
  405: 'The path exists but not with this method',
  409: 'Conflicts with the current state',
  413: 'Request body too large',
  415: 'Request body is not JSON',
  429: 'Rate limit exceeded; see Retry-After',
  500: 'Unexpected error (details are only logged)',
  503: 'Database unavailable; the service recovers by itself',
};

/**
 * OpenAPI/serialisation schemas for a route's error statuses, in the service's dialect and under
 * the media type the service really sends (the dialect's content type, without parameters).
 */
export function errorResponses(dialect: ErrorDialect, statuses: number[]): Record<number, unknown> {
  const mediaType = dialect.contentType.split(';')[0].trim();
  return Object.fromEntries(
    statuses.map((s) => [
      s,
      {
        description: DESCRIPTIONS[s] ?? reasonPhrase(s),
        content: { [mediaType]: { schema: Type.Ref(dialect.schemaRef) } },
      },
    ]),
  );
}

/**
 * Everything every service has, registered in order before its own routes: its error dialect's
 * schemas, the error path, its request rules, connections closed while draining, OpenAPI docs (served
 * offline by Swagger UI at /docs), CORS, security headers, Prometheus metrics, liveness and readiness.
 */
export const platform = fp(
  async function platform(app: FastifyInstance, options: PlatformOptions) {
    const { dialect } = options;
    if (!dialect.schemas.some((s) => s.$id === dialect.schemaRef))
      throw new Error(`the error dialect's schemas do not include its body schema "${dialect.schemaRef}"`);
    for (const schema of dialect.schemas) app.addSchema(schema);
    await app.register(errorHandling, {
      dialect,
      isUnavailable: options.isUnavailable,
      bodyLimit: options.bodyLimit,
      notFoundDetail: options.notFoundDetail,
      logFormat: options.logFormat,
    });
    await app.register(requestRules, options.requestRules);
    closeConnectionsWhileDraining(app);

    await app.register(swagger, {
      openapi: {
        openapi: '3.0.3',
        ...options.docs.openapi,
        info: {
          title: options.docs.title,
          description: options.docs.description,
          version: options.docs.version,
        },
        tags: [
          ...options.docs.tags,
          { name: 'ops', description: 'Health, readiness and metrics for operators' },
        ],
      },
      // Components keep the schemas' `$id`s as names instead of `def-0`, `def-1`...
      refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
    });
    await app.register(swaggerUi, {
      routePrefix: '/docs',
      staticCSP: true,
      // Swagger UI sets inline styles at run time; its own CSP would block them.
      // No upgrade-insecure-requests: over plain HTTP on another host than localhost (a LAN address, a
      // compose host) the browser would fetch the docs' assets over https and the page would break.
      transformStaticCSP: (header) =>
        header
          .replace(/style-src 'self' https:/, "style-src 'self' https: 'unsafe-inline'")
          .replace(/\s*upgrade-insecure-requests;?/, ''),
      uiConfig: { docExpansion: 'list', deepLinking: true },
    });

    await app.register(cors, {
      origin:
        options.cors.origins === 'reflect'
          ? true
          : options.cors.origins.length === 0
            ? false
            : options.cors.origins,
      credentials: options.cors.credentials ?? false,
      methods: options.cors.methods ?? ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
      // Without allowedHeaders @fastify/cors reflects the preflight's Access-Control-Request-Headers.
      ...(options.cors.allowedHeaders === 'reflect'
        ? {}
        : {
            allowedHeaders: options.cors.allowedHeaders ?? ['content-type', 'authorization', 'x-request-id'],
          }),
      exposedHeaders: options.cors.exposedHeaders ?? ['link', 'retry-after', 'x-request-id'],
      strictPreflight: false,
      maxAge: 600,
    });
    // helmet's headers, worked out once (see SECURITY_HEADERS): running its middleware per request
    // (13 functions, a setHeader each) cost about 0.01 ms of a small authenticated read's 0.17 ms of
    // CPU (tools/bench compare).
    const securityHeaders = SECURITY_HEADERS;
    app.addHook('onRequest', (_request, reply, done) => {
      reply.headers(securityHeaders);
      done();
    });
    // A chunked request goes on a moment later (a microtask): by then Node's HTTP parser has read
    // the rest of the packet, so a body with broken framing (a bad chunk size) is refused with a 400
    // in the dialect (serverOptions' clientErrorHandler) even on a route that answers without reading
    // it. Every other request goes on at once: the hooks of a read cost no promise.
    app.addHook('onRequest', (request, _reply, done) => {
      if (request.headers['transfer-encoding'] === undefined) done();
      else queueMicrotask(() => done());
    });
    app.addHook('onSend', (request, reply, payload, done) => {
      reply.header('x-request-id', request.id);
      done(null, payload);
    });

    await app.register(metrics, {
      endpoint: null,
      clearRegisterOnInit: true,
      defaultMetrics: { enabled: true },
      // Per-route latency is `routeMetrics` below: a histogram (quantiles come from it:
      // histogram_quantile), no summary, with fastify-metrics' names, labels and buckets, at a
      // fraction of its per-request cost.
      routeMetrics: { enabled: false },
    });
    await app.register(routeMetrics, { register: app.metrics.client.register });
    const { metricsToken } = options;
    const errors = errorResponses(options.dialect, metricsToken ? [401, 500] : [500]);
    app.get(
      '/metrics',
      {
        onRequest: async (request, reply) => {
          if (metricsToken && !isBearer(request.headers.authorization, metricsToken)) {
            reply.header('www-authenticate', 'Bearer');
            throw new MetricsUnauthorizedError();
          }
        },
        schema: {
          tags: ['ops'],
          summary: 'Prometheus metrics',
          description:
            'Process and per-route request metrics in the Prometheus text exposition format. When the ' +
            'service sets `METRICS_TOKEN`, requires `Authorization: Bearer <METRICS_TOKEN>` (401 otherwise); ' +
            'unset, it is open to anyone who can reach the service.',
          produces: ['text/plain'],
          response: { 200: Type.String({ description: 'Prometheus text format' }), ...errors },
        },
      },
      async (_request, reply) => {
        const register = app.metrics.client.register;
        return reply.type(register.contentType).send(await register.metrics());
      },
    );

    const Status = Type.Object({ status: Type.String() });
    app.get(
      '/healthz',
      {
        schema: {
          tags: ['ops'],
          summary: 'Liveness',
          description: 'Answers 200 while the process serves HTTP, whatever the database does.',
          response: { 200: Status },
        },
      },
      async () => ({ status: 'ok' }),
    );
    app.get(
      '/readyz',
      {
        schema: {
          tags: ['ops'],
          summary: 'Readiness',
          description:
            'Answers 200 when the database answers a query, 503 (in the error format) when it does not, or once the ' +
            'service is shutting down (SIGTERM with SHUTDOWN_DRAIN_MS: it still serves during the drain).',
          response: { 200: Status, ...errorResponses(options.dialect, [503]) },
        },
      },
      async () => {
        if (app.leaving) throw new ShuttingDownError();
        try {
          await options.readiness();
        } catch (error) {
          throw new ServiceUnavailableError({ cause: error });
        }
        return { status: 'ready' };
      },
    );
  },
  { name: '@platform/platform', fastify: '5.x' },
);
