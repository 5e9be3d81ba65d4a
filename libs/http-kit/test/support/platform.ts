import Fastify, { type FastifyInstance } from 'fastify';
import { parseRawResponse, rawExchange, STRICT_REQUEST_RULES } from '@platform/testing';
import {
  createServiceApp,
  platform,
  serverOptions,
  type DocsOptions,
  type ErrorDialect,
  type PlatformOptions,
  type ServiceAppOptions,
} from '../../src';

/** The platform's options for a test of the platform itself: always ready, 1 KiB bodies, any origin. */
export function platformOptions(
  dialect: ErrorDialect,
  overrides: Partial<PlatformOptions> = {},
): PlatformOptions {
  return {
    dialect,
    requestRules: STRICT_REQUEST_RULES,
    readiness: async () => undefined,
    bodyLimit: 1024,
    docs: { title: 't', description: 'd', version: '1', tags: [] },
    cors: { origins: '*' },
    ...overrides,
  };
}

/**
 * An app on the platform in `dialect` (the kit's server options, no logs) with no route yet: unlike
 * `dialectTestApp`, not ready, so the test adds its own.
 */
export async function platformApp(dialect: ErrorDialect): Promise<FastifyInstance> {
  const app = Fastify(serverOptions({ logLevel: 'silent', dialect }));
  await app.register(platform, platformOptions(dialect));
  return app;
}

/**
 * A small service of a test built by `createServiceApp`, as production builds one: 1 KiB bodies, the
 * strict request rules, any origin. The docs' title is also its namespace in a shared Redis.
 */
export function smallServiceApp({
  title,
  description,
  ...options
}: Pick<ServiceAppOptions, 'config' | 'dialect' | 'migrations' | 'database'> &
  Pick<DocsOptions, 'title' | 'description'>): Promise<FastifyInstance> {
  return createServiceApp({
    ...options,
    bodyLimit: 1024,
    requestRules: STRICT_REQUEST_RULES,
    docs: { title, description, version: '0', tags: [] },
    cors: { origins: '*' },
  });
}

/**
 * `GET /slow` on `app`, answering `{"done":true}` once released: `started` resolves when a request
 * is in its handler, `release()` lets that request finish.
 */
export function slowRoute(app: FastifyInstance): { started: Promise<void>; release: () => void } {
  let release!: () => void;
  const started = new Promise<void>((resolve) => {
    app.get('/slow', async () => {
      resolve();
      await new Promise<void>((r) => (release = r));
      return { done: true };
    });
  });
  return { started, release: () => release() };
}

/** Starts `app` listening on a free loopback port: the port. */
export async function listenOnLoopback(app: FastifyInstance): Promise<number> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  return (app.server.address() as { port: number }).port;
}

/** The answer to `raw` sent on a connection of its own, read until the server closes it. */
export async function sendRaw(port: number, raw: string | string[]) {
  return parseRawResponse(await rawExchange(port, raw).closed);
}
