import { randomBytes } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { Type } from '@sinclair/typebox';
import { BadRequest, FORM_CHALLENGE, NotFound, Unauthorized } from '../errors';
import { basicSecurity, bearerSecurity, bodyErrors, errors, NoContent } from '../http';
import { createUsersRepository } from '../users/repository';
import { passwordFingerprint } from './jwt';
import { createMailer, resetPasswordMail } from './mailer';
import { authorizeUrl, exchangeCode, fetchEmail, usernameFor } from './oauth2';
import { OAuth2Body, OAuth2Params, RefreshBody, ResetBody, ResetRequestBody, TokenPair } from './schemas';
import type { IssuedPair } from './service';

const REFRESH_COOKIE = 'refresh_token';
const REFRESH_COOKIE_PATH = '/api/tokens';
const STATE_COOKIE = 'oauth2_state';
const STATE_COOKIE_PATH = '/api/tokens/oauth2';
const STATE_TTL_MS = 600_000;

/** `Authorization: Basic` credentials; the user part is a username or an email address. */
function basicCredentials(header: string | undefined): { name: string; password: string } | undefined {
  const match = /^basic\s+([A-Za-z0-9+/=_-]+)\s*$/i.exec(header ?? '');
  if (!match) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  return { name: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

const tokensRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { config, tokens } = app;
  const users = createUsersRepository(app.database.db);
  const mailer = createMailer(config.mail, app.log);
  app.addHook('onClose', async () => mailer.close());
  const cookieAttributes = {
    path: REFRESH_COOKIE_PATH,
    httpOnly: true,
    secure: config.cookie.secure,
    sameSite: config.cookie.sameSite,
  } as const;

  /** A new pair as the configuration delivers it: the HttpOnly cookie and/or the JSON body. */
  const sendPair = (reply: FastifyReply, pair: IssuedPair) => {
    if (config.refreshTokenInCookie) reply.setCookie(REFRESH_COOKIE, pair.refreshToken, cookieAttributes);
    return reply.send({
      access_token: pair.accessToken,
      refresh_token: config.refreshTokenInBody ? pair.refreshToken : null,
    });
  };

  const loginFailed = (reply: FastifyReply) => {
    // `Form`, not `Basic`: browsers must not pop up their own login dialog.
    reply.header('www-authenticate', FORM_CHALLENGE);
    return new Unauthorized();
  };

  app.post(
    '/tokens',
    {
      schema: {
        tags: ['tokens'],
        summary: 'Create new access and refresh tokens',
        description:
          'Log in with HTTP Basic credentials: the username **or** the email address, and the password. Failure is a 401 with ' +
          '`WWW-Authenticate: Form` (so browsers show no login dialog). Each login creates a new pair and forgets pairs that ended more than a day ago.',
        security: basicSecurity,
        response: { 200: TokenPair, ...errors(401) },
      },
    },
    async (request, reply) => {
      const credentials = basicCredentials(request.headers.authorization);
      if (!credentials || !credentials.name || !credentials.password) throw loginFailed(reply);
      const user = await users.findForLogin(credentials.name);
      if (!(await app.passwords.verify(user?.password_hash, credentials.password)) || !user)
        throw loginFailed(reply);
      return sendPair(reply, await tokens.login(user.id));
    },
  );

  app.put(
    '/tokens',
    {
      schema: {
        tags: ['tokens'],
        summary: 'Refresh an access token',
        description:
          'Rotates a pair: send the (possibly expired) access token in the body and the refresh token in the body or, by default, ' +
          `in the HttpOnly \`refresh_token\` cookie. The old pair keeps working for a short grace period (TOKEN_GRACE_SECONDS, 5 s) so racing ` +
          'refreshes do not log a browser out. A refresh token presented after it ended (expired, or already rotated and past the grace) ' +
          'revokes **every** token of its user: 401.',
        body: RefreshBody,
        response: { 200: TokenPair, ...bodyErrors(401) },
      },
    },
    async (request, reply) => {
      const refreshToken = request.body.refresh_token || request.cookies[REFRESH_COOKIE];
      if (!request.body.access_token || !refreshToken) throw new Unauthorized();
      return sendPair(reply, await tokens.refresh(request.body.access_token, refreshToken));
    },
  );

  app.delete(
    '/tokens',
    {
      onRequest: app.requireToken,
      schema: {
        tags: ['tokens'],
        summary: 'Revoke an access token',
        description:
          'Logout: the presented token and its refresh token stop working at once; the refresh cookie is cleared.',
        security: bearerSecurity,
        response: { 204: NoContent, ...errors(401) },
      },
    },
    async (request, reply) => {
      if (request.tokenId) await tokens.revoke(request.tokenId);
      if (config.refreshTokenInCookie) reply.clearCookie(REFRESH_COOKIE, cookieAttributes);
      return reply.status(204).send();
    },
  );

  app.post(
    '/tokens/reset',
    {
      schema: {
        tags: ['tokens'],
        summary: 'Request a password reset token',
        description:
          'Mails a reset link (`PASSWORD_RESET_URL?token=...`, valid RESET_TOKEN_MINUTES, 15) to a known address: by SMTP when MAIL_SERVER ' +
          'is set, to the log otherwise. Always 204, so addresses cannot be probed.',
        body: ResetRequestBody,
        response: { 204: NoContent, ...bodyErrors() },
      },
    },
    async (request, reply) => {
      const user = await users.findWithHashByEmail(request.body.email);
      if (user) {
        const token = tokens.jwt.resetToken(
          user.email,
          passwordFingerprint(user.password_hash),
          new Date(app.clock().getTime() + config.resetTokenMs),
        );
        const url = `${config.passwordResetUrl}?token=${token}`;
        // Sent after the response: neither the SMTP server's speed nor its failure shows to the caller.
        void mailer
          .send(resetPasswordMail(user.email, user.username, url))
          .catch((err: unknown) => request.log.error({ err }, 'reset mail not sent'));
      }
      return reply.status(204).send();
    },
  );

  app.put(
    '/tokens/reset',
    {
      schema: {
        tags: ['tokens'],
        summary: 'Reset a user password',
        description:
          'Sets a new password with the token from a reset link. A bad, expired or already used token is a 400 without `errors`. ' +
          'Chosen here: a link works once, and a reset ends every session of the user (their tokens are revoked).',
        body: ResetBody,
        response: { 204: NoContent, ...bodyErrors() },
      },
    },
    async (request, reply) => {
      const claims = tokens.jwt.resetClaims(request.body.token, app.clock());
      const user = claims ? await users.findWithHashByEmail(claims.email) : undefined;
      if (!claims || !user || passwordFingerprint(user.password_hash) !== claims.fingerprint)
        throw new BadRequest();
      const replaced = await users.replacePassword(
        user.id,
        user.password_hash,
        await app.passwords.hash(request.body.new_password),
      );
      if (!replaced) throw new BadRequest();
      await tokens.revokeAll(user.id);
      return reply.status(204).send();
    },
  );

  const providerNamed = (name: string) => {
    const provider = Object.hasOwn(config.oauth2.providers, name) ? config.oauth2.providers[name] : undefined;
    if (!provider) throw new NotFound();
    return provider;
  };
  const redirectUri = (name: string) => config.oauth2.redirectUri.replace('{provider}', name);
  const stateCookie = {
    path: STATE_COOKIE_PATH,
    httpOnly: true,
    secure: config.cookie.secure,
    sameSite: config.cookie.sameSite,
    signed: true,
  } as const;
  /** Checks the signed `provider:expiry:state` cookie against the posted state, and spends the state (it works once). */
  const takeState = async (cookie: string | undefined, name: string, state: string): Promise<boolean> => {
    const saved = cookie ? app.unsignCookie(cookie) : undefined;
    if (!saved?.valid || saved.value === null) return false;
    const [savedName, savedExpiry, savedState] = saved.value.split(':');
    const expiry = Number(savedExpiry);
    if (savedName !== name || savedState !== state || !state || !(expiry > app.clock().getTime()))
      return false;
    return tokens.spendOAuth2State(savedState, new Date(expiry));
  };

  app.get(
    '/tokens/oauth2/:provider',
    {
      schema: {
        tags: ['tokens'],
        summary: 'Initiate OAuth2 authentication',
        description:
          "Redirects (302) to the provider's authorization page with a random `state`, also kept in a signed HttpOnly cookie. " +
          'Providers: `github` and `google` when their client ids are set, plus any in OAUTH2_PROVIDERS; others are 404.',
        params: OAuth2Params,
        response: {
          302: Type.Unsafe<void>({ type: 'null', description: 'Redirect to the provider (Location header)' }),
          ...errors(404),
        },
      },
    },
    async (request, reply) => {
      const { provider: name } = request.params;
      const provider = providerNamed(name);
      const state = randomBytes(24).toString('base64url');
      reply.setCookie(STATE_COOKIE, `${name}:${app.clock().getTime() + STATE_TTL_MS}:${state}`, {
        ...stateCookie,
        maxAge: STATE_TTL_MS / 1000,
      });
      return reply.redirect(authorizeUrl(provider, redirectUri(name), state), 302);
    },
  );

  app.post(
    '/tokens/oauth2/:provider',
    {
      schema: {
        tags: ['tokens'],
        summary: 'Create tokens with OAuth2 authentication',
        description:
          'Completes the login: `state` must match the cookie set by the GET, the code is exchanged with the provider and its user-info ' +
          'endpoint gives the email. The user with that email logs in, or a new one is created (username from the address, no password). ' +
          'State mismatch, failed exchange or user lookup: 401.',
        params: OAuth2Params,
        body: OAuth2Body,
        response: { 200: TokenPair, ...bodyErrors(401, 404) },
      },
    },
    async (request, reply) => {
      const { provider: name } = request.params;
      const provider = providerNamed(name);
      const valid = await takeState(request.cookies[STATE_COOKIE], name, request.body.state);
      reply.clearCookie(STATE_COOKIE, stateCookie);
      if (!valid) throw new Unauthorized();
      const accessToken = await exchangeCode(provider, redirectUri(name), request.body.code);
      const email = accessToken ? await fetchEmail(provider, accessToken) : undefined;
      if (!email) throw new Unauthorized();
      const user = (await users.findByEmail(email)) ?? (await createOAuthUser(email));
      return sendPair(reply, await tokens.login(user.id));
    },
  );

  /** A passwordless user for a new OAuth2 address; a racing login for the same address finds the winner's row. */
  async function createOAuthUser(email: string) {
    for (let attempt = 0; ; attempt++) {
      const username = await usernameFor(email, (name) => users.taken('username', name));
      try {
        return await users.create({
          username,
          email,
          password_hash: null,
          first_seen: app.clock(),
          last_seen: app.clock(),
        });
      } catch (error) {
        const existing = await users.findByEmail(email);
        if (existing) return existing;
        if (attempt >= 3) throw error;
      }
    }
  }
};

export default tokensRoutes;
