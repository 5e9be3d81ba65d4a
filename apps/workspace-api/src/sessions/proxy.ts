import type { Readable } from 'node:stream';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import httpProxy from '@fastify/http-proxy';
import {
  kasmDialect,
  BadSessionCookie,
  NoSessionCookie,
  NotSessionOwner,
  SessionOver,
  SessionStarting,
  WorkspaceTimeout,
  WorkspaceUnreachable,
} from '../errors';
import { SESSION_COOKIE } from '../plugins/app/session-cookies';
import { parseId, toKasmId } from '../wire/kasm';
import type { SessionAddress, SessionEngine } from './engine';
import { createConnectRepository } from './connect-repository';

/** How long what the proxy learnt of a session (its owner, state and address) is reused. */
const TARGET_TTL_MS = 2000;
/** Sessions whose target is remembered at once, at most (the oldest go first). */
const TARGET_CACHE_SIZE = 1000;
/** How soon a browser is told to try a starting session again. */
const RETRY_SECONDS = 2;

const HEX32 = /^[0-9a-f]{32}$/;

/** Where a session is, as the proxy sees it now. */
interface Target {
  /** The owner's id (32 hex); undefined: no such session. */
  owner?: string;
  state?: string;
  progress?: number;
  /** The running container's address, or why it cannot be reached. */
  address?: SessionAddress;
  unreachable?: string;
}

const urlOf = ({ host, port }: SessionAddress) => `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

const escapeHtml = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );

/** A refusal as a page, for a browser's navigation (a starting session's page reloads itself). */
function refusalPage(message: string, retry: boolean): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8">${retry ? `<meta http-equiv="refresh" content="${RETRY_SECONDS}">` : ''}
<title>${retry ? 'Starting your workspace' : 'Workspace not available'}</title></head>
<body>
<h1>${retry ? 'Starting your workspace' : 'Workspace not available'}</h1>
<p id="message">${escapeHtml(message)}</p>
${retry ? '<p>This page reloads by itself.</p>' : ''}
</body>
</html>
`;
}

export interface SessionProxyOptions {
  engine: SessionEngine;
}

/**
 * The reverse proxy to the sessions' workspaces: everything under `/session/<kasm_id>/` (HTTP of any
 * method and content, and WebSocket upgrades) goes to the session's container, at the address the
 * engine gives for it, with the path below the prefix (`/session/<id>/websockify` → `/websockify`).
 * Registered with the prefix `/session/:kasm_id`.
 *
 * Only the session's owner gets through: the request must carry the session's cookie (made by the
 * connect page's exchange, `POST /connect`), which names this session and its owner under the
 * service's signature; the session must be running. Refusals are in the service's error format
 * (401: no valid cookie; 403: a cookie of another session, or a session that is over; 503 with
 * Retry-After while it starts; 502/504 when the workspace does not answer), as a small page when a
 * browser navigates (Accept: text/html). The session cookie is never sent on to the workspace.
 *
 * The routes are hidden from the OpenAPI document (what they answer is the workspace's). The
 * service's request rules are not applied to what is proxied: bodies of any type stream to the
 * workspace unread (no JSON-only rule, no body limit, no NUL check), and the service's Content
 * Security Policy is left to the workspace, which serves its own scripts.
 */
const sessionProxy: FastifyPluginAsync<SessionProxyOptions> = async (app, { engine }) => {
  const connect = createConnectRepository(app.database.db);

  // What the proxy learnt of each session recently, so that a page's many requests cost one look-up.
  const targets = new Map<string, { until: number; target: Promise<Target> }>();
  async function lookUp(id: string): Promise<Target> {
    const row = await connect.findForProxy(id);
    if (!row) return {};
    const target: Target = { owner: toKasmId(row.user_id), state: row.state, progress: row.progress };
    if (row.state !== 'running' || !row.container_id) return target;
    // An engine out of reach is the workspace not answering (502), not the service failing.
    const status = await engine
      .status(row.container_id)
      .catch(
        (error: unknown) =>
          ({ state: 'unknown', reason: error instanceof Error ? error.message : String(error) }) as const,
      );
    if (status.state === 'running') target.address = status.address;
    else
      target.unreachable =
        status.state === 'exited' || status.state === 'unknown'
          ? status.reason
          : `its container is ${status.state}`;
    return target;
  }
  function targetOf(id: string): Promise<Target> {
    const now = Date.now();
    const known = targets.get(id);
    if (known && known.until > now) return known.target;
    if (targets.size >= TARGET_CACHE_SIZE) targets.delete(targets.keys().next().value!);
    const target = lookUp(id);
    targets.set(id, { until: now + TARGET_TTL_MS, target });
    // A failed look-up (the database away) is not remembered.
    target.catch(() => targets.delete(id));
    return target;
  }

  // Bodies are held aside unread here and streamed to the workspace by the proxy.
  const heldBodies = new WeakMap<FastifyRequest, Readable>();
  const upstreams = new WeakMap<FastifyRequest, string>();
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (request, payload, done) => {
    heldBodies.set(request, payload as Readable);
    done(null, undefined);
  });

  // The workspace is not this service's API: out of the document (the proof counts them as hidden).
  app.addHook('onRoute', (route) => {
    route.schema = { ...route.schema, hide: true };
  });
  // Its pages bring their own scripts (noVNC's, inline ones): the service's CSP is not theirs.
  app.addHook('onRequest', async (_request, reply) => {
    reply.removeHeader('content-security-policy');
  });

  /**
   * A refusal in the service's error format, or as a page for a browser's navigation. Sent here, not
   * thrown: the service's error handler answers any 5xx but 503 as an unexpected 500, and a
   * workspace that does not answer is a 502 (504 in time), not the service's fault.
   */
  const refuse = (
    request: FastifyRequest,
    reply: FastifyReply,
    error: { statusCode?: number; message: string },
  ): FastifyReply => {
    const status = error.statusCode ?? 500;
    if (status === 503) reply.header('retry-after', String(RETRY_SECONDS));
    reply.code(status).header('cache-control', 'no-store');
    if (/\btext\/html\b/.test(request.headers.accept ?? ''))
      return reply.type('text/html; charset=utf-8').send(refusalPage(error.message, status === 503));
    return reply.type(kasmDialect.contentType).send(kasmDialect.body({ status, detail: error.message }));
  };

  app.addHook('preHandler', async (request, reply) => {
    const { kasm_id: kasmId } = request.params as { kasm_id: string };
    // The cookie's path is the session's id as the service writes it: 32 lowercase hex characters.
    if (!HEX32.test(kasmId)) return refuse(request, reply, { statusCode: 404, message: 'Not Found' });
    const [path, search] = request.url.split(/\?(.*)/s, 2);
    // `/session/<id>` → `/session/<id>/`, under which the workspace's relative links resolve.
    if (path === `/session/${kasmId}`) return reply.redirect(`${path}/${search ? `?${search}` : ''}`, 308);

    const cookie = await app.sessionCookies.check(request, kasmId);
    if (!cookie.ok) {
      const error =
        cookie.why === 'missing'
          ? new NoSessionCookie(kasmId)
          : cookie.why === 'invalid'
            ? new BadSessionCookie(kasmId)
            : new NotSessionOwner(kasmId);
      return refuse(request, reply, error);
    }
    const target = await targetOf(parseId(kasmId)!);
    if (target.owner !== cookie.userId) return refuse(request, reply, new NotSessionOwner(kasmId));
    if (target.state === 'requested' || target.state === 'starting')
      return refuse(request, reply, new SessionStarting(kasmId, `${target.state}, ${target.progress ?? 0}%`));
    if (target.state !== 'running')
      return refuse(request, reply, new SessionOver(kasmId, target.state ?? 'over'));
    if (!target.address)
      return refuse(request, reply, new WorkspaceUnreachable(target.unreachable ?? 'no address'));

    upstreams.set(request, urlOf(target.address));
    const body = heldBodies.get(request);
    if (body) request.body = body;
  });

  /** The workspace's headers, as the browser may see them under the session's path. */
  const rewriteHeaders = (headers: Record<string, unknown>, request: FastifyRequest | undefined) => {
    const kasmId = (request?.params as { kasm_id?: string } | undefined)?.kasm_id;
    const upstream = request ? upstreams.get(request) : undefined;
    const location = headers.location;
    if (typeof location === 'string' && kasmId) {
      const within =
        upstream && location.startsWith(`${upstream}/`) ? location.slice(upstream.length) : location;
      // A path of the workspace's is one under the session's path.
      if (within.startsWith('/') && !within.startsWith('//'))
        headers.location = `/session/${kasmId}${within}`;
    }
    // The workspace may not set (or overwrite) session cookies.
    const setCookie = headers['set-cookie'];
    if (setCookie !== undefined) {
      const kept = ([] as string[])
        .concat(setCookie as string | string[])
        .filter((c) => c.split('=', 1)[0].trim() !== SESSION_COOKIE);
      if (kept.length) headers['set-cookie'] = kept;
      else delete headers['set-cookie'];
    }
    return headers;
  };

  await app.register(httpProxy, {
    // Per request: the address `preHandler` found for the session (HTTP and WebSocket alike).
    upstream: '',
    websocket: true,
    // Bodies: held aside above, streamed as they come.
    proxyPayloads: false,
    internalRewriteLocationHeader: false,
    // The proxy's own access log lines would repeat the service's request log.
    disableRequestLogging: true,
    replyOptions: {
      getUpstream: (request) => upstreams.get(request as FastifyRequest)!,
      rewriteRequestHeaders: (request, headers) => {
        const cookie = app.sessionCookies.withoutSessionCookie(request.headers.cookie);
        const { cookie: _dropped, ...rest } = headers;
        return cookie ? { ...rest, cookie } : rest;
      },
      rewriteHeaders: (headers, request) =>
        rewriteHeaders(
          headers as Record<string, unknown>,
          request as FastifyRequest | undefined,
        ) as typeof headers,
      onError: (reply, { error }) => {
        const cause = (error as Error & { cause?: { code?: string }; code?: string }).cause;
        const code = cause?.code ?? (error as { code?: string }).code ?? '';
        const timedOut = /TIMEOUT/.test(code) || (error as { statusCode?: number }).statusCode === 504;
        refuse(
          reply.request as unknown as FastifyRequest,
          reply as unknown as FastifyReply,
          timedOut ? new WorkspaceTimeout() : new WorkspaceUnreachable(code || error.message),
        );
      },
    },
    wsClientOptions: {
      rewriteRequestHeaders: (headers: Record<string, string>, request: FastifyRequest) => {
        const cookie = app.sessionCookies.withoutSessionCookie(request.headers.cookie);
        return cookie ? { ...headers, cookie } : { ...headers };
      },
    } as never,
  });
};

export default sessionProxy;
