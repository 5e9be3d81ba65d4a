// The baseline of the benchmarks: a bare Fastify server (default options, no logger, no plugins)
// answering one route from memory with the exact bytes and headers the service answered.
// lib/baselines.ts compiles it (with bare-entry.ts) to JavaScript and runs `node baseline.js
// <payload file>` with `PORT`. An entry point only: never import it for its values (only its payload
// type, which is erased).
import { Buffer } from 'node:buffer';
import { fastify } from 'fastify';
import { runBareServer } from './bare-entry';

/** The payload file: the route, the body (base64) and the headers to answer with. */
export interface BaselinePayload {
  route: string;
  body: string;
  headers: Record<string, string>;
}

runBareServer<BaselinePayload>('baseline', ({ route, body, headers }) => {
  const payload = Buffer.from(body, 'base64');
  const app = fastify({ logger: false });
  app.get(route, (_request, reply) => {
    for (const [name, value] of Object.entries(headers)) reply.header(name, value);
    return reply.send(payload);
  });
  return { app };
});
