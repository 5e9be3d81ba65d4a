// The baseline of the benchmarks: a bare Fastify server (default options, no logger, no plugins)
// answering one route from memory with the exact bytes and headers the service answered.
// lib/baselines.ts compiles it to JavaScript and runs `node baseline.js <payload file>` with `PORT`.
// An entry point only: never import it for its values (only its payload type, which is erased).
import { Buffer } from 'node:buffer';
import { readFileSync } from 'node:fs';
import process from 'node:process';
import { fastify } from 'fastify';

/** The payload file: the route, the body (base64) and the headers to answer with. */
export interface BaselinePayload {
  route: string;
  body: string;
  headers: Record<string, string>;
}

async function serve(payloadFile: string): Promise<void> {
  const { route, body, headers } = JSON.parse(readFileSync(payloadFile, 'utf8')) as BaselinePayload;
  const payload = Buffer.from(body, 'base64');
  const app = fastify({ logger: false });
  app.get(route, (_request, reply) => {
    for (const [name, value] of Object.entries(headers)) reply.header(name, value);
    return reply.send(payload);
  });
  await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
  const stop = () => app.close().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

const payloadFile = process.argv[2];
if (!payloadFile) throw new Error('usage: node baseline.js <payload file>');
serve(payloadFile).catch((error) => {
  console.error(error);
  process.exit(1);
});
