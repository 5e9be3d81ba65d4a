import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import helmet, { type HelmetOptions } from 'helmet';

type Middleware = (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void;

/** A stand-in response that records the headers set on it (names lowercased). */
function recorder() {
  const headers: Record<string, string> = {};
  const res = {
    setHeader(name: string, value: string | number | readonly string[]) {
      headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
      return res;
    },
    // helmet takes `X-Powered-By` away; Node never sets it.
    removeHeader() {},
  };
  return { headers, res: res as unknown as ServerResponse, req: { headers: {} } as IncomingMessage };
}

/**
 * The headers a request-independent middleware (helmet's) sets, recorded once against a stand-in
 * response: names lowercased, values as it gives them. It must set, not remove or read.
 */
export async function headersOf(middleware: Middleware): Promise<Record<string, string>> {
  const { headers, req, res } = recorder();
  await new Promise<void>((resolve, reject) =>
    middleware(req, res, (error) => (error ? reject(error as Error) : resolve())),
  );
  return headers;
}

/** helmet's options for every service (a test runs helmet's own middleware with them too). */
export const HELMET_OPTIONS: Readonly<HelmetOptions> = {
  contentSecurityPolicy: {
    directives: {
      'script-src': ["'self'"],
      'img-src': ["'self'", 'data:'],
      // Over plain HTTP on another host than localhost (a LAN address, a compose host) the browser
      // would fetch the docs' assets over https and the page would break.
      'upgrade-insecure-requests': null,
    },
  },
  crossOriginResourcePolicy: { policy: 'cross-origin' },
};

/**
 * helmet's headers with the options every service uses (`HELMET_OPTIONS`): worked out once, at load
 * (helmet's middleware is synchronous and its headers depend on its options only, no nonce). Every
 * answer carries them: the platform's hook adds them to routed responses, and the answers written
 * before any hook can run (malformed HTTP, a bad URL, CONNECT) add them by hand, so no error goes out
 * with fewer (a framework-level 400 once lacked Cross-Origin-Opener-Policy). Swagger UI sets its own
 * CSP (staticCSP), which replaces helmet's; pages we serve load only same-origin scripts.
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = (() => {
  const { headers, req, res } = recorder();
  const outcome: { called?: boolean; error?: unknown } = {};
  const middleware = helmet(HELMET_OPTIONS) as Middleware;
  middleware(req, res, (error) => Object.assign(outcome, { called: true, error }));
  if (!outcome.called) throw new Error('helmet did not set its headers synchronously');
  if (outcome.error) throw outcome.error as Error;
  return Object.freeze(headers);
})();

/** helmet's headers (`SECURITY_HEADERS`) on every routed answer. */
export const helmetPlugin = fp(
  async function helmetPlugin(app: FastifyInstance) {
    // Worked out once: helmet's middleware per request (13 functions, a setHeader each) costs more
    // than setting its fixed headers in one call.
    const securityHeaders = SECURITY_HEADERS;
    app.addHook('onRequest', (_request, reply, done) => {
      reply.headers(securityHeaders);
      done();
    });
  },
  { name: '@platform/helmet', fastify: '5.x' },
);
