import { sign, unsign } from '@fastify/cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { createSecretsRepository } from '@platform/db';

/** The cookie that opens one session through the reverse proxy (one per session, by its path). */
export const SESSION_COOKIE = 'workspace_session';

/** How long a session cookie opens its session (while the session runs): a working day and then some. */
export const SESSION_COOKIE_MAX_AGE_SECONDS = 24 * 60 * 60;

/** Where a session is reached through the proxy (a trailing slash: the workspace's relative links resolve under it). */
export const sessionPathOf = (kasmId: string) => `/session/${kasmId}/`;

/**
 * The cookie's path: the session's proxy path without its trailing slash, which a browser's path
 * matching sends with `/session/<id>` and everything below it, and with no other session's path.
 */
const cookiePathOf = (kasmId: string) => `/session/${kasmId}`;

const HEX32 = /^[0-9a-f]{32}$/;

/** What a request's session cookie says of the session it asks for. */
export type SessionCookieCheck =
  | { ok: true; userId: string }
  /** No cookie; one that is not this service's, malformed or expired; one of another session. */
  | { ok: false; why: 'missing' | 'invalid' | 'other-session' };

export interface SessionCookies {
  /** Sets the cookie that opens session `kasmId` (32 hex) for its owner `userId` (32 hex). */
  issue(reply: FastifyReply, kasmId: string, userId: string): Promise<void>;
  /** What the request's cookie says for session `kasmId` (32 hex). */
  check(request: FastifyRequest, kasmId: string): Promise<SessionCookieCheck>;
  /** The Cookie header without the session cookie (what the workspace is sent). */
  withoutSessionCookie(header: string | undefined): string | undefined;
}

declare module 'fastify' {
  interface FastifyInstance {
    sessionCookies: SessionCookies;
  }
}

/**
 * Session cookies: `<kasm_id>.<user_id>.<expiry (Unix seconds)>`, signed (HMAC-SHA256, @fastify/cookie's
 * signer) with the key the migrations made in the database, so every replica checks every other's
 * cookies and they survive restarts. Bound to the session and its owner by what is signed, to the
 * session's proxy path by the browser; unguessable without the key. HttpOnly, SameSite=Strict,
 * Secure over HTTPS. A cookie opens its session only while the session runs (the proxy asks the
 * database each time), so a destroyed session's cookies open nothing.
 */
export default fp(
  async function sessionCookies(app) {
    const secrets = createSecretsRepository(app.database.db);
    let key: Promise<string> | undefined;
    /** The signing key, read once; a failed read (the database away: a 503) is retried by the next request. */
    const signingKey = () =>
      (key ??= secrets.read('session_cookie').catch((error: unknown) => {
        key = undefined;
        throw error;
      }));

    const cookies: SessionCookies = {
      async issue(reply, kasmId, userId) {
        const expires = Math.floor(Date.now() / 1000) + SESSION_COOKIE_MAX_AGE_SECONDS;
        reply.setCookie(SESSION_COOKIE, sign(`${kasmId}.${userId}.${expires}`, await signingKey()), {
          path: cookiePathOf(kasmId),
          httpOnly: true,
          sameSite: 'strict',
          // Secure whenever the browser reached us over HTTPS (directly or through a trusted proxy).
          secure: 'auto',
          maxAge: SESSION_COOKIE_MAX_AGE_SECONDS,
        });
      },
      async check(request, kasmId) {
        const raw = request.cookies[SESSION_COOKIE];
        if (!raw) return { ok: false, why: 'missing' };
        const { valid, value } = unsign(raw, await signingKey());
        if (!valid || value === null) return { ok: false, why: 'invalid' };
        const [session, userId, expires, ...rest] = value.split('.');
        if (rest.length || !HEX32.test(session) || !HEX32.test(userId) || !/^\d{1,12}$/.test(expires))
          return { ok: false, why: 'invalid' };
        if (Number(expires) <= Date.now() / 1000) return { ok: false, why: 'invalid' };
        if (session !== kasmId) return { ok: false, why: 'other-session' };
        return { ok: true, userId };
      },
      withoutSessionCookie(header) {
        if (!header) return header;
        const kept = header
          .split(';')
          .filter((pair) => pair.split('=', 1)[0].trim() !== SESSION_COOKIE)
          .join(';')
          .trim();
        return kept || undefined;
      },
    };
    app.decorate('sessionCookies', cookies);
  },
  { name: 'session-cookies', dependencies: ['cookies', 'database'] },
);
