import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

/** How long, while draining, a request body may go without a byte arriving before its connection is cut. */
export const STALLED_UPLOAD_MS = 1000;

/**
 * Responses sent while the server drains close their connection, so a keep-alive client does not hold
 * shutdown open until its keep-alive timeout (Fastify only reaps idle sockets). A request still
 * arriving may finish arriving, but one whose body stalls (nothing for `STALLED_UPLOAD_MS`) is cut off;
 * once no request is left, every remaining connection (headers sent byte by byte, say) is closed, so
 * none holds `close()` until its request timeout, past the grace period.
 */
export function closeConnectionsWhileDraining(app: FastifyInstance): void {
  let draining = false;
  let leaving = false;
  app.decorate('leaving', { getter: () => leaving });
  app.decorate('beginLeaving', () => {
    leaving = true;
  });
  let watch: NodeJS.Timeout | undefined;
  // Requests Fastify has started on and not yet answered.
  const open = new Set<IncomingMessage>();
  const progress = new Map<Socket, { bytesRead: number; since: number }>();

  // A request whose connection is gone (the client left, or it was cut off) holds nothing.
  const forgetGone = () => {
    for (const raw of open) if (raw.socket?.destroyed ?? true) open.delete(raw);
  };
  const closeRemaining = () => {
    forgetGone();
    if (open.size === 0) app.server.closeAllConnections();
  };
  const cutStalledUploads = () => {
    const now = Date.now();
    for (const raw of open) {
      if (raw.complete) continue;
      const socket = raw.socket;
      const seen = progress.get(socket);
      if (!seen || seen.bytesRead !== socket.bytesRead)
        progress.set(socket, { bytesRead: socket.bytesRead, since: now });
      else if (now - seen.since >= STALLED_UPLOAD_MS) {
        socket.destroy();
        open.delete(raw);
      }
    }
  };

  // Callback hooks, not async ones: they run on every request, and a promise each is not free.
  app.addHook('onRequest', (request, _reply, done) => {
    open.add(request.raw);
    // Backstop for requests that ended without onResponse or onRequestAbort.
    if (open.size % 1024 === 0) forgetGone();
    done();
  });
  app.addHook('onRequestAbort', (request, done) => {
    open.delete(request.raw);
    done();
  });
  app.addHook('onResponse', (request, _reply, done) => {
    open.delete(request.raw);
    // Once the response has been handed to the socket.
    if (draining) setImmediate(closeRemaining);
    done();
  });
  app.addHook('preClose', async () => {
    draining = true;
    // After Fastify has stopped the server accepting connections (it does so once preClose is done).
    setImmediate(closeRemaining);
    watch = setInterval(() => {
      cutStalledUploads();
      closeRemaining();
    }, 100);
  });
  app.addHook('onClose', async () => {
    clearInterval(watch);
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (draining || leaving) reply.header('connection', 'close');
    done(null, payload);
  });
}

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * True once the service is leaving (SIGTERM with SHUTDOWN_DRAIN_MS): it still serves requests, but
     * readiness answers 503 and every response closes its connection, so load balancers and keep-alive
     * clients move to other replicas before the server stops accepting connections.
     */
    readonly leaving: boolean;
    beginLeaving(): void;
  }
}
