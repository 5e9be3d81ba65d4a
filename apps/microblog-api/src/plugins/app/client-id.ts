import { randomUUID } from 'node:crypto';
import fp from 'fastify-plugin';
import { sign, unsign } from '@fastify/cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { createSecretsRepository, isDatabaseUnavailable } from '@platform/db';

/** The cookie naming one browser, which the panel gets on its first load. */
export const CLIENT_ID_COOKIE = 'microblog_client';

/** 400 days: the longest lifetime browsers keep (Chromium caps a cookie's Max-Age there). */
export const CLIENT_ID_MAX_AGE_SECONDS = 400 * 24 * 60 * 60;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

export interface ClientIds {
  /** The request's client id when its cookie carries this service's signature; otherwise undefined. */
  of(request: FastifyRequest): Promise<string | undefined>;
  /** Gives the browser a new client id unless its request already carries a valid one. */
  ensure(request: FastifyRequest, reply: FastifyReply): Promise<void>;
}

declare module 'fastify' {
  interface FastifyInstance {
    clientIds: ClientIds;
  }
}

/**
 * Signed client ids: a random UUID per browser, signed (HMAC-SHA256, @fastify/cookie's signer) with
 * the key the migrations made in the database, so every replica checks every other's ids and ids
 * survive restarts. An unsigned, forged or malformed cookie is no client id.
 */
export default fp(
  async function clientIdPlugin(app) {
    const secrets = createSecretsRepository(app.database.db);
    let key: Promise<string> | undefined;
    /** The signing key, read once; a failed read is retried by the next request. */
    const signingKey = () =>
      (key ??= secrets.read('client_id').catch((error: unknown) => {
        key = undefined;
        throw error;
      }));
    /** The key, or undefined while the database cannot be reached (the request goes on without an id). */
    const keyIfReachable = async () => {
      try {
        return await signingKey();
      } catch (error) {
        if (!isDatabaseUnavailable(error)) throw error;
        return undefined;
      }
    };

    const clientIds: ClientIds = {
      async of(request) {
        const raw = request.cookies[CLIENT_ID_COOKIE];
        if (!raw) return undefined;
        const secret = await keyIfReachable();
        if (!secret) return undefined;
        const { valid, value } = unsign(raw, secret);
        return valid && value !== null && UUID.test(value) ? value : undefined;
      },
      async ensure(request, reply) {
        if (await clientIds.of(request)) return;
        const secret = await keyIfReachable();
        if (!secret) return;
        reply.setCookie(CLIENT_ID_COOKIE, sign(randomUUID(), secret), {
          path: '/',
          httpOnly: true,
          sameSite: 'lax',
          // Secure whenever the browser reached us over HTTPS (directly or through a trusted proxy).
          secure: 'auto',
          maxAge: CLIENT_ID_MAX_AGE_SECONDS,
        });
      },
    };
    app.decorate('clientIds', clientIds);
  },
  { name: 'client-id', dependencies: ['cookies'], decorators: { fastify: ['database'] } },
);
