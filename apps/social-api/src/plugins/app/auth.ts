import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import { BEARER_CHALLENGE, Unauthorized } from '../../errors';
import { createTokenService, type TokenService } from '../../tokens/service';
import { createUsersRepository, type PublicUserRow } from '../../users/repository';

declare module 'fastify' {
  interface FastifyInstance {
    tokens: TokenService;
    /** onRequest hook of every token endpoint: a live `Bearer` access token, else 401. */
    requireToken: onRequestHookHandler;
  }
  interface FastifyRequest {
    /** The authenticated caller (set by `requireToken`). */
    user: PublicUserRow;
    /** The caller's token pair (absent under DISABLE_AUTH). */
    tokenId?: string;
  }
}

const BEARER = /^bearer\s+(\S+)\s*$/i;

/**
 * Bearer authentication, as the Flask backend does it: the scheme name in any case, a JWT whose
 * token id is live in the database; every authenticated request updates `last_seen`. Failures are
 * 401 with `WWW-Authenticate: Bearer realm="Authentication Required"`. Runs before the body is
 * read, so an anonymous caller learns nothing from validation errors. With DISABLE_AUTH (refused
 * in production) every call acts as user 1.
 */
export default fp(
  async function auth(app) {
    const tokens = createTokenService(app.database.db, app.config, app.clock);
    const users = createUsersRepository(app.database.db);
    app.decorate('tokens', tokens);
    app.decorateRequest('user', null as never);
    app.decorateRequest('tokenId', undefined);

    const reject = (reply: FastifyReply) => {
      reply.header('www-authenticate', BEARER_CHALLENGE);
      return new Unauthorized();
    };

    app.decorate('requireToken', async function requireToken(request: FastifyRequest, reply: FastifyReply) {
      if (app.config.disableAuth) {
        const user = await users.touch(1, app.clock());
        if (!user) throw reject(reply);
        request.user = user;
        return;
      }
      const match = BEARER.exec(request.headers.authorization ?? '');
      const caller = match ? await tokens.authenticate(match[1]) : undefined;
      if (!caller) throw reject(reply);
      const { token_id: tokenId, ...user } = caller;
      request.user = user;
      request.tokenId = tokenId;
    });
  },
  { name: 'auth', dependencies: ['database'], decorators: { fastify: ['config', 'clock'] }, fastify: '5.x' },
);
