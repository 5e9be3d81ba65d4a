import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import FindMyWay, { type HTTPMethod } from 'find-my-way';
import { Type } from '@sinclair/typebox';
import { validationMessageOf, type FieldError } from '@platform/schema';
import { RequestValidationError } from '../../errors';
import {
  reasonPhrase,
  type AjvError,
  type ErrorDialect,
  type Problem,
  type ValidationLocation,
} from '../../dialects';
import { noteRejection } from '../../request-line';

declare module 'fastify' {
  interface FastifyInstance {
    /** The service's error wire format, as given to the error-handling plugin. */
    readonly errorDialect: ErrorDialect;
  }
}

export interface ErrorHandlingOptions {
  dialect: ErrorDialect;
  /** Classifies errors that mean "a dependency is down" (answered 503, logged as a warning). */
  isUnavailable?: (error: unknown) => boolean;
  bodyLimit: number;
  /** The 404 detail for unknown paths, when a service's clients expect fixed wording (e.g. "Not Found"). */
  notFoundDetail?: string;
  /**
   * `pretty`: a refused request's detail goes on its one request line (`OneLinePerRequest`) instead of a
   * line of its own. Default `json`: a `request rejected` entry per refused request.
   */
  logFormat?: 'json' | 'pretty';
}

/** The database wording of a 503, for errors meaning the database cannot be reached. */
export const DATABASE_UNAVAILABLE_DETAIL =
  'The service is temporarily unavailable (database unreachable); try again shortly';

/** Said (to no one: the connection is gone) when a client abandons its request half-sent. */
const CLIENT_ABORTED: Problem = {
  status: 400,
  detail: 'The client closed the connection before its request was complete',
};
const STREAM_ABORTS = new Set(['ECONNRESET', 'ECONNABORTED', 'EPIPE', 'ERR_STREAM_PREMATURE_CLOSE']);

/**
 * True when `error` is the client's own doing: its request stream failed (Node destroys it with
 * `ECONNRESET` "aborted" when the client hangs up mid-body) or its connection is gone with a reset.
 * Such errors share codes with a database outage (`ECONNRESET`), but nothing of ours is down.
 */
export function isClientAbort(error: unknown, request: FastifyRequest): boolean {
  const raw = request.raw;
  if (error && raw.errored === error) return true;
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && STREAM_ABORTS.has(code) && (raw.socket?.destroyed ?? true);
}

const FIXED: Record<
  string,
  Omit<Problem, 'detail'> & { detail: string | ((o: ErrorHandlingOptions) => string) }
> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, detail: 'Content-Type must be application/json' },
  FST_ERR_CTP_BODY_TOO_LARGE: {
    status: 413,
    detail: (o) => `Request body is larger than ${o.bodyLimit} bytes`,
  },
  FST_ERR_CTP_EMPTY_JSON_BODY: {
    status: 400,
    detail: 'Request body is empty; send a JSON object',
    malformedBody: true,
  },
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, detail: 'Malformed JSON body', malformedBody: true },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, detail: 'Content-Length does not match the body' },
  FST_ERR_BAD_URL: { status: 400, detail: 'The path is not a valid URL (malformed percent-encoding)' },
  FST_ERR_MAX_PARAM_LENGTH: { status: 414, detail: 'A path parameter is too long' },
};

/** Turns any error into the service-neutral `Problem` its dialect then formats. */
export function toProblem(error: unknown, options: ErrorHandlingOptions): Problem {
  const e = (error ?? {}) as Partial<FastifyError> & {
    validation?: AjvError[];
    validationContext?: ValidationLocation;
  };
  if (error instanceof RequestValidationError) {
    return {
      status: error.statusCode,
      detail: error.message,
      fields: error.fields,
      location: error.location,
    };
  }
  if (Array.isArray(e.validation)) {
    const location = e.validationContext ?? 'body';
    const fields = (options.dialect.describeValidation ?? describeAjvErrors)(e.validation, location);
    return { status: 400, detail: fields.map((f) => f.message).join('; '), fields, location };
  }
  const fixed = e.code ? FIXED[e.code] : undefined;
  if (fixed)
    return { ...fixed, detail: typeof fixed.detail === 'function' ? fixed.detail(options) : fixed.detail };
  if (error instanceof SyntaxError && e.statusCode === 400)
    return { status: 400, detail: 'Malformed JSON body', malformedBody: true };
  if (options.isUnavailable?.(error) || e.code === 'PLATFORM_UNAVAILABLE')
    return { status: 503, detail: DATABASE_UNAVAILABLE_DETAIL };
  // Another 503 (a full hashing queue, a service shutting down) says what it is, not "database".
  if (e.statusCode === 503)
    return {
      status: 503,
      detail:
        typeof e.message === 'string' && e.message ? e.message : 'The service is busy; try again shortly',
    };
  const status = Number(e.statusCode);
  if (Number.isInteger(status) && status >= 400 && status < 500) {
    return { status, detail: typeof e.message === 'string' && e.message ? e.message : 'Bad request' };
  }
  return { status: 500, detail: 'An unexpected error occurred' };
}

const ARTICLE: Record<string, string> = {
  integer: 'an integer',
  object: 'an object',
  array: 'an array',
  null: 'null',
};
const describeType = (t: unknown) =>
  (Array.isArray(t) ? t : [t]).map((x) => ARTICLE[String(x)] ?? `a ${String(x)}`).join(' or ');

/** Ajv's errors as one readable message per field (named by its dotted path). */
export function describeAjvErrors(errors: AjvError[], location: ValidationLocation): FieldError[] {
  const root = location === 'querystring' ? 'query' : location;
  const groups = new Map<string, AjvError[]>();
  for (const err of errors) {
    const segments = err.instancePath.split('/').slice(1);
    if (err.keyword === 'required') segments.push(String(err.params.missingProperty));
    const field = segments.length ? segments.join('.') : root;
    groups.set(field, [...(groups.get(field) ?? []), err]);
  }
  return [...groups].map(([field, group]) => ({ field, message: `${field} ${describeGroup(group)}` }));
}

function describeGroup(group: AjvError[]): string {
  const custom = group.find((e) => e.keyword !== 'type' && validationMessageOf(e.parentSchema) !== undefined);
  if (custom) return validationMessageOf(custom.parentSchema)!;
  const unionMessage = group.find(
    (e) => e.keyword === 'anyOf' && validationMessageOf(e.parentSchema) !== undefined,
  );
  if (unionMessage) return validationMessageOf(unionMessage.parentSchema)!;
  const first = group.find((e) => e.keyword !== 'anyOf' && e.keyword !== 'oneOf') ?? group[0];
  const p = first.params;
  switch (first.keyword) {
    case 'required':
      return 'is required';
    case 'type':
      return `must be ${describeType(p.type)}`;
    case 'enum':
      return `must be one of: ${(p.allowedValues as unknown[]).join(', ')}`;
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum': {
      const s = first.parentSchema ?? {};
      if (typeof s.minimum === 'number' && typeof s.maximum === 'number')
        return `must be between ${s.minimum} and ${s.maximum}`;
      return `must be ${p.comparison} ${p.limit}`;
    }
    case 'minLength':
    case 'maxLength': {
      const s = first.parentSchema ?? {};
      if (typeof s.minLength === 'number' && typeof s.maxLength === 'number')
        return `must be ${s.minLength}..${s.maxLength} characters`;
      return first.keyword === 'minLength'
        ? `must be at least ${p.limit} characters`
        : `must be at most ${p.limit} characters`;
    }
    case 'additionalProperties':
      return `has an unknown field "${String(p.additionalProperty)}"`;
    case 'format':
      return `must be a valid ${String(p.format)}`;
    default:
      return first.message ?? 'is invalid';
  }
}

const DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid request: malformed JSON, wrong types or values that break a rule',
  401: 'Missing or invalid credentials',
  403: 'Not permitted',
  404: 'Nothing found under this id or path',
  405: 'The path exists but not with this method',
  409: 'Conflicts with the current state',
  413: 'Request body too large',
  415: 'Request body is not JSON',
  429: 'Rate limit exceeded; see Retry-After',
  500: 'Unexpected error (details are only logged)',
  503: 'Database unavailable; the service recovers by itself',
};

/**
 * OpenAPI/serialisation schemas for a route's error statuses, in the service's dialect and under
 * the media type the service really sends (the dialect's content type, without parameters).
 */
export function errorResponses(dialect: ErrorDialect, statuses: number[]): Record<number, unknown> {
  const mediaType = dialect.contentType.split(';')[0].trim();
  return Object.fromEntries(
    statuses.map((s) => [
      s,
      {
        description: DESCRIPTIONS[s] ?? reasonPhrase(s),
        content: { [mediaType]: { schema: Type.Ref(dialect.schemaRef) } },
      },
    ]),
  );
}

/**
 * The one error path of a service: schema failures, handler-raised validation errors, unknown
 * routes (404), known paths with another method (405 with `Allow`), body parser failures
 * (400/413/415), dependency outages (503) and unexpected exceptions (500, details only in the log)
 * all leave in the service's dialect. Registers the dialect's schemas (for `$ref`s and the OpenAPI
 * document) and decorates `app.errorDialect`.
 */
export const errorHandling = fp(
  async function errorHandling(app: FastifyInstance, options: ErrorHandlingOptions) {
    const { dialect } = options;
    if (!dialect.schemas.some((s) => s.$id === dialect.schemaRef))
      throw new Error(`the error dialect's schemas do not include its body schema "${dialect.schemaRef}"`);
    for (const schema of dialect.schemas) app.addSchema(schema);
    app.decorate('errorDialect', dialect);
    const known = FindMyWay({ ignoreTrailingSlash: false });
    const methods = new Set<HTTPMethod>();

    app.addHook('onRoute', (route) => {
      for (const method of [route.method].flat() as HTTPMethod[]) {
        if (method === 'OPTIONS' || route.url === '*') continue;
        methods.add(method);
        try {
          known.on(method, route.url, () => undefined);
        } catch {
          // the same method and path registered twice (e.g. HEAD next to GET): already known
        }
      }
    });

    const oneLine = options.logFormat === 'pretty';
    const send = (reply: FastifyReply, problem: Problem) => {
      if (oneLine && problem.status < 500) noteRejection(reply.request, problem.detail);
      if (problem.status === 503) reply.header('retry-after', '5');
      return reply.status(problem.status).type(dialect.contentType).send(dialect.body(problem));
    };

    app.setErrorHandler((error, request, reply) => {
      if (isClientAbort(error, request)) {
        // The client's event, not ours: never a dependency warning or a 503 in the metrics.
        request.log.info({ code: (error as { code?: string }).code }, 'client aborted the request');
        return send(reply, CLIENT_ABORTED);
      }
      const problem = toProblem(error, options);
      const code = (error as { code?: string }).code;
      if (problem.status === 500) request.log.error({ err: error }, 'unexpected error');
      else if (code === 'PLATFORM_SHUTTING_DOWN') request.log.info('not ready: shutting down');
      else if (problem.status === 503 && problem.detail === DATABASE_UNAVAILABLE_DETAIL)
        request.log.warn({ err: error }, 'dependency unavailable');
      else if (problem.status === 503) request.log.info({ code, detail: problem.detail }, 'busy');
      else if (!oneLine)
        request.log.info({ status: problem.status, detail: problem.detail }, 'request rejected');
      return send(reply, problem);
    });

    app.setNotFoundHandler((request, reply) => {
      const path = request.url.split('?')[0];
      const allowed = [...methods].filter((m) => m !== request.method && known.find(m, path)).sort();
      if (!methods.has(request.method as HTTPMethod) && request.method !== 'OPTIONS') {
        // A method no route of the service takes (TRACE, PROPFIND...), on any path: a 405 naming what
        // this path takes (an empty Allow when nothing: RFC 9110, 10.2.1).
        reply.header('allow', allowed.join(', '));
        return send(reply, {
          status: 405,
          detail: `Method ${request.method} is not supported${allowed.length ? `; ${path} takes ${allowed.join(', ')}` : ''}`,
        });
      }
      if (allowed.length) {
        reply.header('allow', allowed.join(', '));
        return send(reply, {
          status: 405,
          detail: `Method ${request.method} is not allowed on ${path}; use ${allowed.join(', ')}`,
        });
      }
      return send(reply, {
        status: 404,
        detail: options.notFoundDetail ?? `No such path: ${request.method} ${path}`,
      });
    });
  },
  { name: '@platform/error-handling', fastify: '5.x' },
);

export interface DefaultErrorResponsesOptions {
  /** The statuses every route can answer whatever it does (e.g. 500, and 503 while the database is away). */
  statuses: number[];
}

/**
 * Declares, in the dialect, the error statuses every route can meet, on each route registered after
 * it that documents errors of its own (a status of 400 or more): the service declares only what is
 * particular to a route, and the OpenAPI document still lists every status the route can answer.
 * Routes that document no error (a page, a redirect, a static document) are left as they are.
 */
export const defaultErrorResponses = fp(
  async function defaultErrorResponses(app: FastifyInstance, options: DefaultErrorResponsesOptions) {
    const defaults = errorResponses(app.errorDialect, options.statuses);
    app.addHook('onRoute', (route) => {
      const response = route.schema?.response as Record<string, unknown> | undefined;
      if (!response || !Object.keys(response).some((status) => Number(status) >= 400)) return;
      // A route's own declaration of a status wins; integer keys keep ascending order.
      route.schema!.response = { ...defaults, ...response };
    });
  },
  { name: '@platform/default-error-responses', fastify: '5.x', dependencies: ['@platform/error-handling'] },
);
