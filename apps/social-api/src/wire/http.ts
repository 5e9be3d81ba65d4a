import type { FastifySchema, onRequestHookHandler } from 'fastify';
import { Type } from '@sinclair/typebox';
import { MAX_ID } from '@platform/schema';
import { errorResponses } from '@platform/http-kit';
import { NotFound, socialDialect } from '../errors';

/** OpenAPI error responses in the service's error format (500 and 503 are the platform's, on every route). */
export const errors = (...statuses: number[]) => errorResponses(socialDialect, [...new Set(statuses)]);

/** Error responses of a route that takes a JSON body: also malformed (400), too large (413), not JSON (415). */
export const bodyErrors = (...statuses: number[]) => errors(400, 413, 415, ...statuses);

/** A response without a body (OpenAPI: no content). */
export const NoContent = Type.Unsafe<void>({ type: 'null', description: 'No body' });

/** The OpenAPI security requirement of token endpoints (the scheme is declared in app.ts). */
export const bearerSecurity = [{ api_key: [] }];
export const basicSecurity = [{ basic_auth: [] }];

/**
 * Route options of one feature: its OpenAPI tag on every route; a `token` route also gets the
 * bearer check and the security requirement that documents it, never one without the other.
 */
export function routeOptions(tag: string, requireToken: onRequestHookHandler) {
  return {
    open: <S extends FastifySchema>(schema: S) => ({ schema: { tags: [tag], ...schema } }),
    token: <S extends FastifySchema>(schema: S) => ({
      onRequest: requireToken,
      schema: { tags: [tag], security: bearerSecurity, ...schema },
    }),
  };
}

/** A path id as Flask's `<int:id>` reads it: digits only, else the route does not exist (404). */
export function parseId(text: string): number {
  if (!/^[0-9]{1,10}$/.test(text)) throw new NotFound();
  const id = Number(text);
  if (id < 1 || id > MAX_ID) throw new NotFound();
  return id;
}
