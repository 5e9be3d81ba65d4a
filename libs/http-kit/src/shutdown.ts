import type { FastifyInstance } from 'fastify';

/**
 * Responses sent while the server drains close their connection, so a keep-alive client does not hold
 * shutdown open until its keep-alive timeout (Fastify only reaps idle sockets).
 */
export function closeConnectionsWhileDraining(app: FastifyInstance): void {
  let draining = false;
  app.addHook('preClose', async () => {
    draining = true;
  });
  app.addHook('onSend', async (_request, reply) => {
    if (draining) reply.header('connection', 'close');
  });
}
