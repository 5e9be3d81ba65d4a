import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerOptions } from 'node:http';
import { BlockList, isIPv4, isIPv6, type Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import AjvCompiler from '@fastify/ajv-compiler';
import pinoPretty from 'pino-pretty';
import { annotationKeywords } from '@platform/schema';
import { reasonPhrase, type ErrorDialect, type Problem } from './dialects';
import { toProblem } from './plugins/app/error-handling';
import { redactUrl } from './redact-url';
import { noteRejection, OneLinePerRequest } from './request-line';
import { SECURITY_HEADERS } from './plugins/external/helmet';

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
  /**
   * Open connections one client address may hold (default 256; 0: no cap); one more is closed at
   * once, so a single address cannot take every slot of `maxConnections`. Trusted proxies
   * (`trustProxy`) are exempt: every client behind them shares their address, and the balancer
   * applies its own per-client limit.
   */
  maxConnectionsPerAddress?: number;
  /**
   * Where pretty logs go (default: standard output); tests capture them here. JSON logs always go
   * to standard output.
   */
  logDestination?: NodeJS.WritableStream;
}

/** Default of `maxConnections`. */
export const MAX_CONNECTIONS = 4096;

/** Default of `maxConnectionsPerAddress`. */
export const MAX_CONNECTIONS_PER_ADDRESS = 256;

/** Longest path parameter; a longer one is a 414 (the router would otherwise refuse at 100 characters). */
export const MAX_PARAM_LENGTH = 500;

export { redactUrl, SECRET_QUERY_PARAMETERS } from './redact-url';

/**
 * The security headers of the answers written before any hook runs (malformed HTTP, a bad URL,
 * CONNECT): helmet's, the same as every other answer's.
 */
export const BARE_SECURITY_HEADERS: Readonly<Record<string, string>> = SECURITY_HEADERS;

const CLIENT_ERRORS: Record<string, Problem> = {
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, detail: 'The request was not received in time' },
  HPE_HEADER_OVERFLOW: { status: 431, detail: 'Request headers are too large' },
  HPE_INVALID_METHOD: { status: 400, detail: 'Unknown HTTP method' },
};
const MALFORMED_HTTP: Problem = { status: 400, detail: 'Malformed HTTP request' };
const CONNECT_REFUSED: Problem = {
  status: 405,
  detail: 'Method CONNECT is not supported: this is not a proxy',
};

/**
 * A whole HTTP/1.1 answer in the dialect, written on a socket where no hook can run: the security
 * headers are added by hand, and the connection closes after it.
 */
function rawAnswer(dialect: ErrorDialect, problem: Problem, extra: Record<string, string> = {}): string {
  const body = JSON.stringify(dialect.body(problem));
  const headers = {
    'content-type': dialect.contentType,
    'content-length': String(Buffer.byteLength(body)),
    connection: 'close',
    ...extra,
    ...BARE_SECURITY_HEADERS,
  };
  return (
    `HTTP/1.1 ${problem.status} ${reasonPhrase(problem.status)}\r\n` +
    Object.entries(headers)
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('') +
    `\r\n${body}`
  );
}

/**
 * Answers what Node refuses before Fastify sees a request (malformed HTTP, an unknown method,
 * oversized headers, a request not received in time) with a minimal raw response in the service's
 * dialect, then closes the connection.
 */
function clientErrorHandler(dialect: ErrorDialect) {
  return function onClientError(this: FastifyInstance, error: NodeJS.ErrnoException, socket: Socket) {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const problem = (error.code && CLIENT_ERRORS[error.code]) || MALFORMED_HTTP;
    this.log.debug({ code: error.code, status: problem.status }, 'client error');
    // A response already under way on this socket must not be corrupted by a second one.
    const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (socket.writable && !inFlight?.headersSent) socket.write(rawAnswer(dialect, problem));
    socket.destroy();
  };
}

/**
 * Node hands a CONNECT request to the server's `connect` listeners instead of the request handler,
 * and without one drops the connection unanswered: answered here, a 405 in the dialect.
 */
function refuseConnect(dialect: ErrorDialect) {
  const answer = rawAnswer(dialect, CONNECT_REFUSED, { allow: '' });
  return (_request: IncomingMessage, socket: Socket) => {
    socket.on('error', () => socket.destroy());
    // A client that never closes its side is not kept.
    socket.setTimeout(1000, () => socket.destroy());
    socket.end(answer);
  };
}

/** Whether an address is one of the trusted proxies' (`trustProxy`: true, or addresses and CIDRs). */
function trustedProxies(trustProxy: boolean | string | undefined): (address: string) => boolean {
  if (trustProxy === true) return () => true;
  if (!trustProxy) return () => false;
  const list = new BlockList();
  // proxy-addr's (Fastify's) names for reserved ranges.
  const named: Record<string, string[]> = {
    loopback: ['127.0.0.1/8', '::1/128'],
    linklocal: ['169.254.0.0/16', 'fe80::/10'],
    uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
  };
  for (const entry of trustProxy.split(',').flatMap((e) => named[e.trim()] ?? [e.trim()])) {
    const [address, bits] = entry.split('/');
    const type = isIPv4(address) ? 'ipv4' : isIPv6(address) ? 'ipv6' : undefined;
    if (!type) continue;
    if (bits === undefined) list.addAddress(address, type);
    else list.addSubnet(address, Number(bits), type);
  }
  return (address) => {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped) return list.check(mapped[1], 'ipv4');
    return list.check(address, isIPv4(address) ? 'ipv4' : 'ipv6');
  };
}

/**
 * At most `cap` open connections per client address: one more is closed at once, before a byte of
 * it is read, so one address (5,000 stalled uploads, say) cannot take every connection slot while
 * other clients are refused. Its own connections still end by the server's timeouts, and then free
 * their places.
 */
function capConnectionsPerAddress(server: Server, cap: number, exempt: (address: string) => boolean) {
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress;
    if (address === undefined || exempt(address)) return;
    const count = open.get(address) ?? 0;
    if (count >= cap) {
      socket.destroy();
      return;
    }
    open.set(address, count + 1);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left > 0) open.set(address, left);
      else open.delete(address);
    });
  });
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
  const maxConnections = input.maxConnections ?? MAX_CONNECTIONS;
  const perAddress = input.maxConnectionsPerAddress ?? MAX_CONNECTIONS_PER_ADDRESS;
  const pretty = input.logFormat === 'pretty';
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
      // In-process (a person reads it; no worker thread to lose lines at exit).
      ...(pretty
        ? {
            stream: pinoPretty({
              translateTime: 'HH:MM:ss.l',
              ignore: 'pid,hostname',
              destination: input.logDestination ?? 1,
              sync: true,
            }),
          }
        : {}),
    },
    // Pretty mode logs one line per request instead of Fastify's two entries.
    ...(pretty ? { logController: new OneLinePerRequest() } : {}),
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
      if (perAddress > 0) capConnectionsPerAddress(server, perAddress, trustedProxies(input.trustProxy));
      if (dialect) server.on('connect', refuseConnect(dialect));
      return server;
    },
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    ...(dialect
      ? {
          // A bad URL or an over-long path parameter fails before any hook: answered here in the dialect.
          frameworkErrors: (error, request, reply) => {
            const problem = toProblem(error, { dialect, bodyLimit: input.bodyLimit ?? 1024 * 1024 });
            if (pretty) noteRejection(request, problem.detail);
            else request.log.info({ status: problem.status, detail: problem.detail }, 'request rejected');
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
