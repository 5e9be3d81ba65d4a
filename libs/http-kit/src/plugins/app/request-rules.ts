import { errorCodes, type FastifyInstance, type RouteOptions, type preValidationHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import { TRIM } from '@platform/schema';
import { RequestValidationError } from '../../errors';

/**
 * How a service reads request bodies before validation. Every rule is explicit: a service states
 * each one in its `app.ts`, so a reader sees what its clients may send.
 */
export interface RequestRulesOptions {
  /**
   * Trim the top-level body fields whose schema is marked `TRIM` (`TrimmedText`, or a union with such
   * a branch) before validation counts their characters.
   */
  trim: boolean;
  /**
   * A NUL character in any string or key of a body is a 400 naming the field: bad input stops before
   * it reaches the database, whose text cannot store it (it would answer with an error).
   */
  rejectNul: boolean;
  /** Bodies must be JSON: any other content type is a 415 (Fastify alone would also parse text/plain). */
  jsonOnly: boolean;
  /**
   * A route whose schema takes a body, called without one:
   * - `'reject'`: the missing body is validated, a 400 about the body as a whole;
   * - `'as-empty-object'`: `{}` is validated instead, so each missing required field is named (for
   *   clients that send no body when every field is optional, or credentials in headers only).
   */
  emptyBody: 'reject' | 'as-empty-object';
  /**
   * Also count as no body a body that says nothing: empty or blank whatever its content type (`fetch`
   * sends `text/plain` with `body: ''`) and the JSON `null`; content of another type than JSON is still
   * a 415. Default false: an empty JSON body is a 400, an empty body of another type a 415.
   */
  blankBodyIsEmpty?: boolean;
}

/** The path of the first string (value or key) holding a NUL character, which PostgreSQL text cannot store. */
export function findNul(value: unknown, path = '', depth = 0): string | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? path || 'body' : undefined;
  if (!value || typeof value !== 'object' || depth > 32) return undefined;
  for (const [key, child] of Object.entries(value)) {
    const childPath = path ? `${path}.${key}` : key;
    if (key.includes('\u0000')) return childPath;
    const found = findNul(child, childPath, depth + 1);
    if (found) return found;
  }
  return undefined;
}

/** Trims the top-level body fields whose schema is marked `TRIM`, before validation counts characters. */
function trimmingHook(route: RouteOptions): preValidationHookHandler | undefined {
  const props = (route.schema?.body as { properties?: Record<string, Record<string, unknown>> } | undefined)
    ?.properties;
  if (!props) return undefined;
  const keys = Object.entries(props)
    .filter(([, s]) => s[TRIM] || (s.anyOf as Record<string, unknown>[] | undefined)?.some((b) => b[TRIM]))
    .map(([k]) => k);
  if (!keys.length) return undefined;
  return async (request) => {
    const body = request.body as Record<string, unknown> | null;
    if (!body || typeof body !== 'object' || Array.isArray(body)) return;
    for (const k of keys) if (typeof body[k] === 'string') body[k] = (body[k] as string).trim();
  };
}

/** Blank bodies of any content type parse to no body; other content than JSON stays a 415. */
function parseBlankAsNoBody(app: FastifyInstance) {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (typeof body === 'string' && body.trim() === '') return done(null, undefined);
    return parseJson(request, body as string, done);
  });
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (request, body, done) => {
    if ((body as Buffer).length === 0) return done(null, undefined);
    return done(
      new errorCodes.FST_ERR_CTP_INVALID_MEDIA_TYPE(request.headers['content-type'] ?? ''),
      undefined,
    );
  });
}

/**
 * The service's rules for request bodies (see `RequestRulesOptions`), applied to every route
 * registered after it.
 */
export const requestRules = fp(
  async function requestRules(app: FastifyInstance, options: RequestRulesOptions) {
    const blankIsEmpty = options.blankBodyIsEmpty ?? false;

    if (options.rejectNul) {
      app.addHook('preValidation', (request, _reply, done) => {
        const field = findNul(request.body);
        done(
          field
            ? new RequestValidationError([{ field, message: `${field} must not contain NUL characters` }])
            : undefined,
        );
      });
    }

    if (options.jsonOnly) app.removeContentTypeParser('text/plain');
    if (blankIsEmpty) parseBlankAsNoBody(app);

    app.addHook('onRoute', (route) => {
      // Runs before the route's own hooks, so they and validation see `{}`.
      if (options.emptyBody === 'as-empty-object' && route.schema?.body) {
        route.preValidation = [
          (request, _reply, done) => {
            if (request.body === undefined || (blankIsEmpty && request.body === null)) request.body = {};
            done();
          },
          ...[route.preValidation ?? []].flat(),
        ];
      }
      // Runs after the route's own hooks, right before validation counts characters.
      const trim = options.trim ? trimmingHook(route) : undefined;
      if (trim) route.preValidation = [...[route.preValidation ?? []].flat(), trim];
    });
  },
  { name: '@platform/request-rules', fastify: '5.x' },
);

/**
 * Refuses the numbers of `values` (a route's parsed query) that are not finite, one message per
 * field, as a 400 on the query string. Ajv's coercion turns the text `Infinity` (or `1e309`) into
 * Infinity and then checks nothing after it (not even `maximum`, which it applies to finite numbers
 * only), so no schema can refuse them: a route whose query takes numbers calls this first.
 */
export function rejectNonFinite<T extends object>(
  values: T,
  fields: readonly (keyof T & string)[],
  message: (field: keyof T & string) => string,
): void {
  const invalid = fields.filter((field) => {
    const value = values[field] as unknown;
    return typeof value === 'number' && !Number.isFinite(value);
  });
  if (invalid.length)
    throw new RequestValidationError(
      invalid.map((field) => ({ field, message: message(field) })),
      'querystring',
    );
}
