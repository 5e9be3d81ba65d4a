import Fastify, { type FastifyInstance, type InjectOptions } from 'fastify';
import { Type } from '@sinclair/typebox';
import { isDatabaseUnavailable } from '@platform/db';
import { StringEnum, TrimmedText, VALIDATION_MESSAGE, withMessage } from '@platform/schema';
import {
  defaultErrorResponses,
  errorResponses,
  platform,
  RequestValidationError,
  serverOptions,
  type ErrorDialect,
  type RequestRulesOptions,
  type ServerOptionsInput,
} from '@platform/http-kit';

/** The request rules every service asks for today: trimmed text, no NUL characters, JSON only, no empty bodies. */
export const STRICT_REQUEST_RULES: RequestRulesOptions = {
  trim: true,
  rejectNul: true,
  jsonOnly: true,
  emptyBody: 'reject',
};

/** The body limit of `dialectTestApp`, in bytes. */
export const DIALECT_TEST_BODY_LIMIT = 1024;

export interface DialectTestAppOptions {
  /** Resolves when the app is ready (default: always ready). */
  readiness?: () => Promise<void>;
  /** Default: `STRICT_REQUEST_RULES`. */
  requestRules?: RequestRulesOptions;
  /** Server options beyond the kit's defaults (e.g. a short request timeout). */
  server?: Omit<ServerOptionsInput, 'dialect' | 'bodyLimit'>;
  /** Bearer token /metrics requires (default: none). */
  metricsToken?: string;
  /** Routes of the test's own, registered after the kit's (e.g. one with a bug planted on purpose). */
  routes?: (app: FastifyInstance) => void;
}

/**
 * A bare app on the platform in `dialect`, to test how an error dialect speaks without a service
 * around it: the kit's server options, a 1024-byte body limit, production's outage check, and routes
 * that fail in every way the one error path knows:
 * - `POST /things`: a body with every kind of rule (`name` trimmed 2..5 characters, `kind` a or b,
 *   `count` an integer 1..9, `ref` a union with its own message, `tag` an `allOf` rule with its own
 *   message); answers 201 `{name}`;
 * - `GET /things?limit=`: an integer 1..10, echoed back (query strings are coerced);
 * - `GET /things/:id`: the path parameter echoed back (for URL and parameter-length failures);
 * - `GET /boom`: an unexpected exception naming internals;
 * - `GET /down`: a refused database connection (an outage);
 * - `GET /rule`: a rule a handler checks, broken in the query string.
 * Its OpenAPI document describes every answer (500 and 503 on each route that documents errors, as a
 * service's), so the services' suites, which prove each response against its app's document, can use it.
 */
export async function dialectTestApp(
  dialect: ErrorDialect,
  options: DialectTestAppOptions = {},
): Promise<FastifyInstance> {
  const app = Fastify(
    serverOptions({ logLevel: 'silent', ...options.server, bodyLimit: DIALECT_TEST_BODY_LIMIT, dialect }),
  );
  await app.register(platform, {
    dialect,
    requestRules: options.requestRules ?? STRICT_REQUEST_RULES,
    readiness: options.readiness ?? (async () => undefined),
    isUnavailable: isDatabaseUnavailable,
    bodyLimit: DIALECT_TEST_BODY_LIMIT,
    docs: {
      title: 'kit test',
      description: 'd',
      version: '0.0.1',
      tags: [{ name: 'things', description: 'things' }],
    },
    cors: { origins: ['http://allowed.example'], credentials: true },
    metricsToken: options.metricsToken,
    logFormat: options.server?.logFormat,
  });
  await app.register(defaultErrorResponses, { statuses: [500, 503] });
  app.post(
    '/things',
    {
      schema: {
        tags: ['things'],
        body: Type.Object(
          {
            name: TrimmedText({ min: 2, max: 5 }),
            kind: StringEnum(['a', 'b'] as const),
            count: Type.Optional(Type.Integer({ minimum: 1, maximum: 9 })),
            ref: Type.Optional(
              withMessage(
                Type.Union([Type.Integer(), Type.String({ pattern: '^x' })]),
                'must be a number or an x-string',
              ),
            ),
            tag: Type.Optional(
              Type.String({
                maxLength: 5,
                allOf: [{ pattern: '^\\p{L}', [VALIDATION_MESSAGE]: 'Must start with a letter' }],
              }),
            ),
          },
          { additionalProperties: false },
        ),
        response: { 201: Type.Object({ name: Type.String() }), ...errorResponses(dialect, [400, 413, 415]) },
      },
    },
    async (request, reply) => reply.status(201).send({ name: (request.body as { name: string }).name }),
  );
  app.get(
    '/things',
    {
      schema: {
        querystring: Type.Object({ limit: Type.Integer({ minimum: 1, maximum: 10 }) }),
        response: { 200: Type.Object({ limit: Type.Integer() }), ...errorResponses(dialect, [400]) },
      },
    },
    async (request) => request.query,
  );
  app.get(
    '/things/:id',
    { schema: { response: { 200: Type.Object({ id: Type.String() }) } } },
    async (request) => request.params,
  );
  app.get('/boom', { schema: { response: errorResponses(dialect, [500]) } }, async () => {
    throw new Error('relation "secret_table" does not exist at /srv/app.ts:12');
  });
  app.get('/down', { schema: { response: errorResponses(dialect, [503]) } }, async () => {
    throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
  });
  app.get('/rule', { schema: { response: errorResponses(dialect, [400]) } }, async () => {
    throw new RequestValidationError(
      [{ field: 'start', message: 'start must come before end' }],
      'querystring',
    );
  });
  options.routes?.(app);
  await app.ready();
  return app;
}

/** `POST /things` of a dialect test app, with `payload` as its JSON body. */
export function postThing(app: FastifyInstance, payload: unknown) {
  return app.inject({ method: 'POST', url: '/things', payload: payload as InjectOptions['payload'] });
}

/** A body `POST /things` refuses on three fields, and how the platform's default wording names them. */
export const INVALID_THING = {
  payload: { name: 5, kind: 'c', count: '3' },
  fields: [
    { field: 'name', message: 'name must be a string' },
    { field: 'kind', message: 'kind must be one of: a, b' },
    { field: 'count', message: 'count must be an integer' },
  ],
  detail: 'name must be a string; kind must be one of: a, b; count must be an integer',
};

/** A body `POST /things` of `dialectTestApp` refuses before validation. */
export type RefusedBody = [
  name: string,
  request: { payload: string; headers: { 'content-type': string } },
  status: number,
  detail: string,
];

const refused = (
  name: string,
  payload: string,
  contentType: string,
  status: number,
  detail: string,
): RefusedBody => [name, { payload, headers: { 'content-type': contentType } }, status, detail];
const JSON_TYPE = 'application/json';
const NOT_JSON = 'Content-Type must be application/json';

/**
 * The bodies the request rules refuse (with `STRICT_REQUEST_RULES`) before any schema looks at them,
 * with the status and the detail every dialect carries, as a `test.each` table.
 */
export const REFUSED_BODIES: RefusedBody[] = [
  refused('malformed JSON', '{"name":', JSON_TYPE, 400, 'Malformed JSON body'),
  refused('an empty JSON body', '', JSON_TYPE, 400, 'Request body is empty; send a JSON object'),
  refused('a text body', 'name=abc', 'text/plain', 415, NOT_JSON),
  refused('a form body', 'name=abc', 'application/x-www-form-urlencoded', 415, NOT_JSON),
  refused(
    'an oversized body',
    JSON.stringify({ name: 'x'.repeat(2 * DIALECT_TEST_BODY_LIMIT) }),
    JSON_TYPE,
    413,
    `Request body is larger than ${DIALECT_TEST_BODY_LIMIT} bytes`,
  ),
];
