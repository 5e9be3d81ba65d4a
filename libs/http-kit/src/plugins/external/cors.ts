import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import cors from '@fastify/cors';

export interface CorsOptions {
  /** `'*'` for any origin, `'reflect'` to echo any origin back (with credentials), or a list of allowed origins (empty: CORS off, no CORS header at all). */
  origins: '*' | 'reflect' | string[];
  credentials?: boolean;
  exposedHeaders?: string[];
  /** Default: content-type, authorization, x-request-id; `'reflect'` allows whatever a preflight asks for. */
  allowedHeaders?: string[] | 'reflect';
  methods?: string[];
}

/** `@fastify/cors` with the service's origins and the headers every service exposes. */
export const corsPlugin = fp(
  async function corsPlugin(app: FastifyInstance, options: CorsOptions) {
    await app.register(cors, {
      origin: options.origins === 'reflect' ? true : options.origins.length === 0 ? false : options.origins,
      credentials: options.credentials ?? false,
      methods: options.methods ?? ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
      // Without allowedHeaders @fastify/cors reflects the preflight's Access-Control-Request-Headers.
      ...(options.allowedHeaders === 'reflect'
        ? {}
        : { allowedHeaders: options.allowedHeaders ?? ['content-type', 'authorization', 'x-request-id'] }),
      exposedHeaders: options.exposedHeaders ?? ['link', 'retry-after', 'x-request-id'],
      strictPreflight: false,
      maxAge: 600,
    });
  },
  { name: '@platform/cors', fastify: '5.x' },
);
