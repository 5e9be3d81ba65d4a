import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

/**
 * Every answer names its request in `x-request-id` (the caller's own id when it sent a sane one, see
 * `serverOptions`' `genReqId`), so a client can quote it and one id follows a request across logs.
 */
export const requestId = fp(
  async function requestId(app: FastifyInstance) {
    app.addHook('onSend', (request, reply, payload, done) => {
      reply.header('x-request-id', request.id);
      done(null, payload);
    });
  },
  { name: '@platform/request-id', fastify: '5.x' },
);
