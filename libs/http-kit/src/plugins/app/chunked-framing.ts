import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

/**
 * A chunked request goes on a moment later (a microtask): by then Node's HTTP parser has read the
 * rest of the packet, so a body with broken framing (a bad chunk size) is refused with a 400 in the
 * dialect (serverOptions' clientErrorHandler) even on a route that answers without reading it.
 * Every other request goes on at once: the hooks of a read cost no promise.
 */
export const chunkedFraming = fp(
  async function chunkedFraming(app: FastifyInstance) {
    app.addHook('onRequest', (request, _reply, done) => {
      if (request.headers['transfer-encoding'] === undefined) done();
      else queueMicrotask(() => done());
    });
  },
  { name: '@platform/chunked-framing', fastify: '5.x' },
);
