import { randomUUID } from 'node:crypto';
import { createServer, type ServerOptions } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import AjvCompiler from '@fastify/ajv-compiler';
import { annotationKeywords } from '@platform/schema';
import { reasonPhrase, type ErrorDialect, type Problem } from './dialects';
import { toProblem } from './error-handling';

export interface ServerOptionsInput {
  logLevel?: string;
  /** Largest accepted request body, in bytes. */
  bodyLimit?: number;
  /** Trust `X-Forwarded-*` from a proxy in front (true, or a comma-separated list of addresses/CIDRs). */
  trustProxy?: boolean | string;
  /** `pretty` prints human-readable lines (local runs); `json` is for log shippers. */
  logFormat?: 'json' | 'pretty';
  /** The service's own credential headers, censored wherever a log line carries request headers. */
  secretHeaders?: string[];
  /**
   * The service's error wire format, for the errors raised before any route or hook runs (a bad URL,
   * an over-long path parameter, malformed HTTP, a request timeout); without it they keep Fastify's
   * and Node's own bodies.
   */
  dialect?: ErrorDialect;
  /** How long a client may take to send a whole request, headers and body (default 30 s); then 408. */
  requestTimeoutMs?: number;
  /** How long a client may take to send the request headers (default 15 s, at most `requestTimeoutMs`). */
  headersTimeoutMs?: number;
  /** How long a connection may stay silent, a handler running included (default 60 s). */
  connectionTimeoutMs?: number;
  /** How long an idle keep-alive connection stays open (default 72 s, above common proxies' 60 s). */
  keepAliveTimeoutMs?: number;
  /** Concurrent connections beyond which new ones are refused, so they cannot exhaust file descriptors (default 4096). */
  maxConnections?: number;
}

/** Longest path parameter; a longer one is a 414 (the router would otherwise refuse at 100 characters). */
export const MAX_PARAM_LENGTH = 500;

/** Query parameters whose values never reach a log line (case-insensitive). */
export const SECRET_QUERY_PARAMETERS = [
  'token',
  'access_token',
  'refresh_token',
  'id_token',
  'password',
  'api_key',
  'api_key_secret',
  'client_secret',
  'secret',
  'code',
];
const SECRET_QUERY = new Set(SECRET_QUERY_PARAMETERS);

/** `url` with the values of secret query parameters replaced by `[REDACTED]`. */
export function redactUrl(url: string): string {
  const start = url.indexOf('?');
  if (start === -1) return url;
  const query = url
    .slice(start + 1)
    .split('&')
    .map((pair) => {
      const equals = pair.indexOf('=');
      const rawName = equals === -1 ? pair : pair.slice(0, equals);
      let name = rawName;
      try {
        name = decodeURIComponent(rawName.replace(/\+/g, ' '));
      } catch {
        // a malformed name is logged as sent
      }
      return equals !== -1 && SECRET_QUERY.has(name.toLowerCase()) ? `${rawName}=[REDACTED]` : pair;
    });
  return `${url.slice(0, start)}?${query.join('&')}`;
}

/**
 * Security headers for the error responses sent before hooks run (where helmet cannot add its own):
 * the ones helmet sets by default that matter for a JSON error body.
 */
export const BARE_SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'cross-origin-resource-policy': 'cross-origin',
  'referrer-policy': 'no-referrer',
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'SAMEORIGIN',
};

const CLIENT_ERRORS: Record<string, Problem> = {
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, detail: 'The request was not received in time' },
  HPE_HEADER_OVERFLOW: { status: 431, detail: 'Request headers are too large' },
};
const MALFORMED_HTTP: Problem = { status: 400, detail: 'Malformed HTTP request' };

/**
 * Answers what Node refuses before Fastify sees a request (malformed HTTP, oversized headers, a
 * request not received in time) with a minimal raw response in the service's dialect, then closes
 * the connection. No hook can run here, so the security headers are written by hand.
 */
function clientErrorHandler(dialect: ErrorDialect) {
  return function onClientError(this: FastifyInstance, error: NodeJS.ErrnoException, socket: Socket) {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const problem = (error.code && CLIENT_ERRORS[error.code]) || MALFORMED_HTTP;
    this.log.debug({ code: error.code, status: problem.status }, 'client error');
    // A response already under way on this socket must not be corrupted by a second one.
    const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (socket.writable && !inFlight?.headersSent) {
      const body = JSON.stringify(dialect.body(problem));
      const headers = {
        'content-type': dialect.contentType,
        'content-length': String(Buffer.byteLength(body)),
        connection: 'close',
        ...BARE_SECURITY_HEADERS,
      };
      socket.write(
        `HTTP/1.1 ${problem.status} ${reasonPhrase(problem.status)}\r\n` +
          Object.entries(headers)
            .map(([name, value]) => `${name}: ${value}\r\n`)
            .join('') +
          `\r\n${body}`,
      );
    }
    socket.destroy();
  };
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The Fastify options every service uses, in `main.ts` and in tests alike, so tests exercise the
 * server production runs.
 */
export function serverOptions(input: ServerOptionsInput = {}): FastifyServerOptions {
  const { dialect } = input;
  const requestTimeout = input.requestTimeoutMs ?? 30_000;
  // Node refuses a headers timeout above the request timeout.
  const headersTimeout =
    requestTimeout > 0
      ? Math.min(input.headersTimeoutMs ?? 15_000, requestTimeout)
      : (input.headersTimeoutMs ?? 15_000);
  const keepAliveTimeout = input.keepAliveTimeoutMs ?? 72_000;
  const connectionTimeout = input.connectionTimeoutMs ?? 60_000;
  const maxConnections = input.maxConnections ?? 4096;
  const http: ServerOptions = {
    requestTimeout,
    headersTimeout,
    // Node looks for timed-out requests every 30 s by default, which would double a 30 s timeout.
    connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor(headersTimeout / 4))),
  };
  return {
    logger: {
      level: input.logLevel ?? 'info',
      serializers: {
        // Fastify's own request serializer, with secret query parameters censored.
        req: (req: FastifyRequest) => ({
          method: req.method,
          url: redactUrl(req.url),
          host: req.host,
          remoteAddress: req.ip,
          remotePort: req.socket?.remotePort,
        }),
      },
      redact: [
        'req.headers.authorization',
        'req.headers.cookie',
        ...(input.secretHeaders ?? []).map((name) => `req.headers[${JSON.stringify(name.toLowerCase())}]`),
        'res.headers["set-cookie"]',
      ],
      ...(input.logFormat === 'pretty'
        ? {
            transport: {
              target: 'pino-pretty',
              options: { translateTime: 'HH:MM:ss.l', ignore: 'pid,hostname' },
            },
          }
        : {}),
    },
    // Honour a sane caller's request id (a proxy or another service) so one id follows a request
    // across logs. Fastify would take `requestIdHeader` verbatim, so genReqId reads it instead.
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    bodyLimit: input.bodyLimit ?? 1024 * 1024,
    // A client that stalls (a body that never ends, headers sent byte by byte) is cut off instead of
    // holding a connection, and a file descriptor, for ever.
    requestTimeout,
    connectionTimeout,
    keepAliveTimeout,
    // Fastify's own HTTP/1 server, plus a cap on concurrent connections (no Fastify option sets it).
    serverFactory: (handler) => {
      const server = createServer(http, handler);
      server.keepAliveTimeout = keepAliveTimeout;
      server.requestTimeout = requestTimeout;
      server.setTimeout(connectionTimeout);
      server.maxConnections = maxConnections;
      return server;
    },
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    ...(dialect
      ? {
          // A bad URL or an over-long path parameter fails before any hook: answered here in the dialect.
          frameworkErrors: (error, request, reply) => {
            const problem = toProblem(error, { dialect, bodyLimit: input.bodyLimit ?? 1024 * 1024 });
            request.log.info({ status: problem.status, detail: problem.detail }, 'request rejected');
            void (reply as FastifyReply)
              .status(problem.status)
              .headers({ ...BARE_SECURITY_HEADERS, 'x-request-id': request.id })
              .type(dialect.contentType)
              .send(dialect.body(problem));
          },
          clientErrorHandler: clientErrorHandler(dialect),
        }
      : {}),
    trustProxy: input.trustProxy ?? false,
    // A request that slips in while the server drains is served (the database closes only after
    // the server has): Fastify's own 503 here would not be in the service's error format.
    return503OnClosing: false,
    schemaController: { compilersFactory: { buildValidator: strictBodyValidator() as never } },
  };
}

/**
 * Query strings, path parameters and headers arrive as text and are coerced to the schema's types;
 * JSON bodies are not (a number where text is expected is a 400, as the contracts require).
 */
function strictBodyValidator() {
  const forBody = AjvCompiler();
  const forText = AjvCompiler();
  const plugins = [
    (ajv: { addKeyword(k: string): unknown }) => {
      for (const keyword of annotationKeywords) ajv.addKeyword(keyword);
      return ajv;
    },
  ];
  return (externalSchemas: unknown, ajvServerOptions: unknown) => {
    const base = {
      customOptions: { allErrors: true, verbose: true, removeAdditional: false, useDefaults: true },
      plugins,
    };
    const body = forBody(
      externalSchemas as never,
      { ...base, customOptions: { ...base.customOptions, coerceTypes: false } } as never,
    );
    const text = forText(
      externalSchemas as never,
      { ...base, customOptions: { ...base.customOptions, coerceTypes: true } } as never,
    );
    void ajvServerOptions;
    return (route: { httpPart?: string }) =>
      route.httpPart === 'body' ? body(route as never) : text(route as never);
  };
}

export { randomUUID as newRequestId };
