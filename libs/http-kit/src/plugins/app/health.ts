import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Type } from '@sinclair/typebox';
import { ServiceUnavailableError, ShuttingDownError } from '../../errors';
import { errorResponses } from './error-handling';

export interface HealthOptions {
  /** Resolves when the service can serve traffic (database reachable); rejects otherwise. */
  readiness: () => Promise<void>;
}

/**
 * Liveness (`/healthz`: the process serves HTTP) and readiness (`/readyz`: `readiness` resolves and
 * the service is not leaving), for operators and load balancers.
 */
export const health = fp(
  async function health(app: FastifyInstance, options: HealthOptions) {
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
          response: { 200: Status, ...errorResponses(app.errorDialect, [503]) },
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
  {
    name: '@platform/health',
    fastify: '5.x',
    dependencies: ['@platform/error-handling', '@platform/shutdown'],
  },
);
