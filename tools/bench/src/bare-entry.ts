// What the bare servers' entry points (baseline.ts, bare.ts) share: `node <name>.js <payload file>`,
// the app listening on PORT (loopback), a clean exit on SIGTERM or SIGINT, exit 1 on a failed start.
// lib/baselines.ts compiles it beside them, so it imports nothing but Node (and erased types).
import { readFileSync } from 'node:fs';
import process from 'node:process';
import type { FastifyInstance } from 'fastify';

/** A bare server built from its payload; `release` runs after the app has closed (a pool to end). */
export interface BareServer {
  app: FastifyInstance;
  release?: () => Promise<unknown>;
}

/**
 * Runs the bare server `name`: reads the payload file named on the command line, builds the server
 * with `build`, listens on PORT and closes it (then `release`) on SIGTERM or SIGINT.
 */
export function runBareServer<Payload>(name: string, build: (payload: Payload) => BareServer): void {
  const payloadFile = process.argv[2];
  if (!payloadFile) throw new Error(`usage: node ${name}.js <payload file>`);
  const serve = async () => {
    const { app, release } = build(JSON.parse(readFileSync(payloadFile, 'utf8')) as Payload);
    await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
    const stop = () =>
      app
        .close()
        .then(release)
        .then(() => process.exit(0));
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  };
  serve().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
