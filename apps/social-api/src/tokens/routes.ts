import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { Type } from '@sinclair/typebox';
import { FORM_CHALLENGE, resetTokenResponse, throttledResponse, Unauthorized } from '../errors';
import { basicSecurity, bodyErrors, errors, NoContent, routeOptions } from '../wire/http';
import { createUsersRepository } from '../users/repository';
import { createPasswordLogin } from './login';
import { createMailer } from './mailer';
import { createOAuth2Flow } from './oauth2-flow';
import { createPasswordReset } from './reset';
import { OAuth2Body, OAuth2Params, RefreshBody, ResetBody, ResetRequestBody, TokenPair } from './schemas';
import type { IssuedPair } from './service';

const REFRESH_COOKIE = 'refresh_token';
const REFRESH_COOKIE_PATH = '/api/tokens';
const STATE_COOKIE = 'oauth2_state';
const STATE_COOKIE_PATH = '/api/tokens/oauth2';

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
  const { config, tokens, clock, passwords } = app;
  const { open, token } = routeOptions('tokens', app.requireToken);
  const users = createUsersRepository(app.database.db);
  const mailer = createMailer(config.mail, config.mode, app.log);
  app.addHook('onClose', async () => mailer?.close());
  // Ended pairs are also forgotten on a timer, not only at logins: an account that only refreshes
  // adds a row per refresh. One run at a time; a failed run is logged and the next one tries again.
  let pruning = false;
  const pruneTimer = setInterval(() => {
    if (pruning) return;
    pruning = true;
    tokens
      .prune()
      .then((deleted) => deleted && app.log.debug({ deleted }, 'ended token pairs pruned'))
      .catch((err: unknown) => app.log.warn({ err }, 'ended token pairs not pruned'))
      .finally(() => (pruning = false));
  }, config.tokenPrune.intervalMs);
  pruneTimer.unref();
  app.addHook('onClose', async () => clearInterval(pruneTimer));
  const loginWithPassword = createPasswordLogin(users, passwords, tokens);
  const limits = app.authLimits;
  const reset = createPasswordReset({ config, clock, users, tokens, passwords, mailer });
  const oauth2 = createOAuth2Flow({ config, clock, users, tokens });
  const cookieAttributes = {
    path: REFRESH_COOKIE_PATH,
    httpOnly: true,
    secure: config.cookie.secure,
    sameSite: config.cookie.sameSite,
  } as const;
  const stateCookie = {
    path: STATE_COOKIE_PATH,
    httpOnly: true,
    secure: config.cookie.secure,
    sameSite: config.cookie.sameSite,
    signed: true,
  } as const;

  /** The OAuth2 state cookie's value, or undefined when it is absent or its signature does not hold. */
  const stateFromCookie = (cookie: string | undefined) => {
    const unsigned = cookie ? app.unsignCookie(cookie) : undefined;
    return unsigned?.valid ? (unsigned.value ?? undefined) : undefined;
  };

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
    open({
      summary: 'Create new access and refresh tokens',
      description:
        'Log in with HTTP Basic credentials: the username **or** the email address, and the password. Failure is a 401 with ' +
        '`WWW-Authenticate: Form` (so browsers show no login dialog). Each login creates a new pair and forgets pairs that ended more than a day ago.\n\n' +
        'Chosen here (the Flask backend has no limit): failed logins are limited per client address (LOGIN_FAILURES_PER_ADDRESS, 30) and ' +
        'per account from one address (LOGIN_FAILURES_PER_ACCOUNT, 10) per LOGIN_WINDOW_SECONDS (300): over either, 429 with `Retry-After` and ' +
        '`errors.json.password` (one sentence saying when to try again) for one window, each lockout in a row twice as long (at most ' +
        'LOGIN_MAX_WAIT_SECONDS, 3600); asking during the wait never extends it. Each attempt is counted before its password is checked ' +
        '(and given back when it succeeds), so concurrent guesses get at most the limit checked. Beyond LOGIN_FAILURES_PER_ACCOUNT_ANYWHERE ' +
        '(50) failures an hour for one account from all addresses, an address that fails for it waits 1 s before its next try, doubling ' +
        'with each further failure. Only failures count, and only addresses that have failed wait, so nobody can lock the owner of an ' +
        "account out from elsewhere. Passwords are argon2id at OWASP's parameters (19 MiB, 2 passes, 1 lane; ARGON2_*), " +
        'a bounded number at once (ARGON2_CONCURRENCY), clients without a recent failure before those with one; when ARGON2_QUEUE ' +
        'more are waiting the answer is 503 with `Retry-After`. ' +
        'A password stored with other parameters is re-hashed at these on its next successful login.',
      security: basicSecurity,
      response: { 200: TokenPair, ...errors(401, 429, 503), ...throttledResponse('password') },
    }),
    async (request, reply) => {
      const credentials = basicCredentials(request.headers.authorization);
      if (!credentials) throw loginFailed(reply);
      const attempt = await limits.beginLogin(request, reply, credentials.name, 'password');
      const pair = await loginWithPassword(credentials.name, credentials.password, attempt.priority);
      if (!pair) {
        await attempt.failed();
        throw loginFailed(reply);
      }
      await attempt.succeeded();
      return sendPair(reply, pair);
    },
  );

  app.put(
    '/tokens',
    open({
      summary: 'Refresh an access token',
      description:
        'Rotates a pair: send the (possibly expired) access token in the body and the refresh token in the body or, by default, ' +
        `in the HttpOnly \`refresh_token\` cookie. The old pair keeps working for a short grace period (TOKEN_GRACE_SECONDS, 5 s) so racing ` +
        'refreshes do not log a browser out. A refresh token presented after it ended (expired, or already rotated and past the grace) ' +
        'revokes **every** token of its user: 401.',
      body: RefreshBody,
      response: { 200: TokenPair, ...bodyErrors(401) },
    }),
    async (request, reply) => {
      const refreshToken = request.body.refresh_token || request.cookies[REFRESH_COOKIE];
      if (!request.body.access_token || !refreshToken) throw new Unauthorized();
      return sendPair(reply, await tokens.refresh(request.body.access_token, refreshToken));
    },
  );

  app.delete(
    '/tokens',
    token({
      summary: 'Revoke an access token',
      description:
        'Logout: the presented token and its refresh token stop working at once; the refresh cookie is cleared.',
      response: { 204: NoContent, ...errors(401) },
    }),
    async (request, reply) => {
      if (request.tokenId) await tokens.revoke(request.tokenId);
      if (config.refreshTokenInCookie) reply.clearCookie(REFRESH_COOKIE, cookieAttributes);
      return reply.status(204).send();
    },
  );

  app.post(
    '/tokens/reset',
    {
      ...open({
        summary: 'Request a password reset token',
        description:
          'Mails a reset link (`PASSWORD_RESET_URL?token=...`, valid RESET_TOKEN_MINUTES, 15) to a known address: by SMTP when MAIL_SERVER ' +
          'is set, to the log otherwise. Always 204, so addresses cannot be probed.\n\n' +
          'Chosen here: in production mode (or when set) RESETS_PER_ADDRESS (10) requests per client address and RESETS_PER_EMAIL (3) per ' +
          'target address an hour, fixed windows (requests over the limit do not restart them); over either, 429 with `Retry-After` and ' +
          '`errors.json.email` (nothing is sent). Off in development unless set.',
        body: ResetRequestBody,
        response: { 204: NoContent, ...bodyErrors(429), ...throttledResponse('email') },
      }),
      // The limits are the route's gate, not part of the reset: counted once the body is valid, before
      // any mail is looked up.
      preHandler: async (request, reply) => {
        await limits.resetByAddress.allow(request.ip, reply);
        await limits.resetByEmail.allow(request.body.email.trim().toLowerCase(), reply);
      },
    },
    async (request, reply) => {
      await reset.request(request.body.email, request.log);
      return reply.status(204).send();
    },
  );

  app.put(
    '/tokens/reset',
    open({
      summary: 'Reset a user password',
      description:
        'Sets a new password with the token from a reset link. A bad, expired or already used token is a 400 with `errors.json.token` ' +
        '(react-microblog then shows its own message and sends the user to request a new link). ' +
        'Chosen here: a link works once, and a reset ends every session of the user (their tokens are revoked).',
      body: ResetBody,
      response: { 204: NoContent, ...bodyErrors(), ...resetTokenResponse },
    }),
    async (request, reply) => {
      await reset.reset(request.body.token, request.body.new_password);
      return reply.status(204).send();
    },
  );

  app.get(
    '/tokens/oauth2/:provider',
    open({
      summary: 'Initiate OAuth2 authentication',
      description:
        "Redirects (302) to the provider's authorization page with a random `state`, also kept in a signed HttpOnly cookie. " +
        'Providers: `github` and `google` when their client ids are set, plus any in OAUTH2_PROVIDERS; others are 404.',
      params: OAuth2Params,
      response: {
        302: Type.Unsafe<void>({ type: 'null', description: 'Redirect to the provider (Location header)' }),
        ...errors(404),
      },
    }),
    async (request, reply) => {
      const { location, savedState, maxAgeSeconds } = oauth2.begin(request.params.provider);
      reply.setCookie(STATE_COOKIE, savedState, { ...stateCookie, maxAge: maxAgeSeconds });
      return reply.redirect(location, 302);
    },
  );

  app.post(
    '/tokens/oauth2/:provider',
    open({
      summary: 'Create tokens with OAuth2 authentication',
      description:
        'Completes the login: `state` must match the cookie set by the GET, the code is exchanged with the provider and its user-info ' +
        "endpoint gives the email, which the provider must say it verified (the provider's `email_verified_field`). The user with " +
        'that email logs in, or a new one is created (username from the address, no password); an existing account with a password ' +
        'is reached only once its address was proven (a password reset through the mailed link, or a verified sign-in). ' +
        'State mismatch, failed exchange or user lookup: 401; an unverified address, or an unproven account: 401 whose description says what to do.',
      params: OAuth2Params,
      body: OAuth2Body,
      response: { 200: TokenPair, ...bodyErrors(401, 404) },
    }),
    async (request, reply) => {
      const accepted = await oauth2.spendState(
        request.params.provider,
        stateFromCookie(request.cookies[STATE_COOKIE]),
        request.body.state,
      );
      // Spent or refused, the state is done with (only an unknown provider's 404 leaves its cookie).
      reply.clearCookie(STATE_COOKIE, stateCookie);
      if (!accepted) throw new Unauthorized();
      return sendPair(reply, await oauth2.login(accepted, request.body.code));
    },
  );
};

export default tokensRoutes;
