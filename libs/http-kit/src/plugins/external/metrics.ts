import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import metrics from 'fastify-metrics';
import { Type } from '@sinclair/typebox';
import { createError } from '../../errors';
import { errorResponses } from '../app/error-handling';

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

export interface MetricsOptions {
  /** When set, /metrics requires `Authorization: Bearer <metricsToken>` (401 otherwise). */
  metricsToken?: string;
}

/**
 * `fastify-metrics` (the process's default metrics, `app.metrics`) and the `/metrics` endpoint in
 * the Prometheus text format. Per-route latency is the `routeMetrics` plugin's.
 */
export const metricsPlugin = fp(
  async function metricsPlugin(app: FastifyInstance, options: MetricsOptions) {
    await app.register(metrics, {
      endpoint: null,
      clearRegisterOnInit: true,
      defaultMetrics: { enabled: true },
      // Per-route latency is `routeMetrics`: a histogram (quantiles come from it: histogram_quantile),
      // no summary, with fastify-metrics' names, labels and buckets, at a fraction of its per-request cost.
      routeMetrics: { enabled: false },
    });
    const { metricsToken } = options;
    const errors = errorResponses(app.errorDialect, metricsToken ? [401, 500] : [500]);
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
  },
  { name: '@platform/metrics', fastify: '5.x', dependencies: ['@platform/error-handling'] },
);
