import { randomUUID } from 'node:crypto';
import type { FastifyServerOptions } from 'fastify';
import AjvCompiler from '@fastify/ajv-compiler';
import { annotationKeywords } from '@platform/schema';

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
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The Fastify options every service uses, in `main.ts` and in tests alike, so tests exercise the
 * server production runs.
 */
export function serverOptions(input: ServerOptionsInput = {}): FastifyServerOptions {
  return {
    logger: {
      level: input.logLevel ?? 'info',
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
