import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { eventChannel, type Database } from '@platform/db';
import { createServiceApp, eventStreamPlugin, openApiTags } from '@platform/http-kit';
import { BODY_LIMIT, type Config } from './config';
import type { SocialDatabase } from './db/schema';
import { migrations } from './db/migrations';
import { socialDialect } from './errors';
import cookies from './plugins/external/cookie';
import auth from './plugins/app/auth';
import secretKey from './plugins/app/secret-key';
import { Pagination } from './wire/pagination';
import { User } from './users/schemas';
import { Post } from './posts/schemas';
import { TokenPair } from './tokens/schemas';
import { createAuthLimits, type AuthLimits } from './tokens/limits';
import { createPasswords, type Passwords } from './users/passwords';
import tokensRoutes from './tokens/routes';
import usersRoutes from './users/routes';
import postsRoutes from './posts/routes';
import { createEventsRepository } from './events/repository';
import eventsRoutes from './events/routes';

declare module 'fastify' {
  interface FastifyInstance {
    database: Database<SocialDatabase>;
    config: Config;
    /** The service's notion of "now" (tests move it to expire tokens). */
    clock: () => Date;
    passwords: Passwords;
    /** Limits of the routes that check or hash passwords and send mail (tokens/limits.ts). */
    authLimits: AuthLimits;
  }
}

export interface AppDependencies {
  /** An open database to use instead of opening one from `config.database` (tests). */
  database?: Database<SocialDatabase>;
  clock?: () => Date;
}

const DESCRIPTION = `A small social network: sign up, log in, write posts, follow people, read a feed. A drop-in
replacement for the Flask "microblog-api" backend: its React front end and scripts work unchanged.

**Authentication.** \`POST /api/tokens\` with HTTP Basic credentials (username or email) returns an
access token; send it as \`Authorization: Bearer <token>\` (it lasts ACCESS_TOKEN_MINUTES, 15). The
refresh token travels in the HttpOnly cookie \`refresh_token\` (\`Path=/api/tokens\`); \`PUT /api/tokens\`
rotates the pair.

**Pagination.** Collections take \`limit\` (default and maximum 25), \`offset\`, or \`after\` (a timestamp
on posts, a username on follower lists) and answer \`{"pagination": {limit, offset, count, total}, "data": [...]}\`.

**Errors.** \`{"code", "message", "description"}\`; validation errors add \`errors\` keyed by location
(\`json\`, \`query\`) then field, each a list of messages.

Chosen where the Flask backend leaves it open: emails are unique whatever their case; usernames sort
bytewise; \`limit\` of 0 or less is a 400 in \`after\` mode too; an empty body counts as no body, any
other non-JSON body is a 415; logout clears the refresh cookie and ends the pair at once; a reset link
works once and ends every session of its user; OAuth2 usernames get a number suffix when taken.`;

/** Builds the service (not listening): the same instance `main.ts` serves and tests inject into. */
export async function buildApp(config: Config, deps: AppDependencies = {}): Promise<FastifyInstance> {
  const app = await createServiceApp({
    config,
    bodyLimit: BODY_LIMIT,
    dialect: socialDialect,
    // Bodies as the Flask backend reads them: an empty body (the React client sends
    // `Content-Type: application/json` with no body on follow, unfollow and logout) is no body, and a
    // route that takes a body then validates `{}` (so required fields say "Missing data for required
    // field." instead of a type error). Malformed JSON stays a 400 without `errors`. An empty body of
    // any other type is no body too (`fetch` sends `text/plain` with `body: ''`); content in any other
    // type is a 415.
    requestRules: {
      trim: true,
      rejectNul: true,
      jsonOnly: true,
      emptyBody: 'as-empty-object',
      blankBodyIsEmpty: true,
    },
    migrations,
    database: deps.database,
    docs: {
      title: 'Microblog API',
      description: DESCRIPTION,
      version: '1.0',
      tags: openApiTags({
        tokens: 'Logins, token refresh and revocation, password resets, OAuth2',
        users: 'Users and who follows whom',
        posts: 'Posts and the feed',
      }),
      openapi: {
        components: {
          securitySchemes: {
            basic_auth: {
              type: 'http',
              scheme: 'basic',
              description: 'Username or email, and password (POST /api/tokens only)',
            },
            api_key: {
              type: 'http',
              scheme: 'bearer',
              bearerFormat: 'JWT',
              description: 'The access token from POST /api/tokens',
            },
          },
        },
      },
    },
    // The Flask backend's flask-cors: any origin echoed back, with credentials (the refresh cookie).
    cors: config.useCors
      ? {
          origins: 'reflect',
          credentials: true,
          methods: ['GET', 'HEAD', 'POST', 'OPTIONS', 'PUT', 'PATCH', 'DELETE'],
          allowedHeaders: 'reflect',
        }
      : { origins: [] },
  });
  app.decorate('clock', deps.clock ?? (() => new Date()));
  app.decorate('passwords', createPasswords(config));
  app.decorate('authLimits', createAuthLimits(app, config.limits));
  for (const schema of [User, Post, TokenPair, Pagination]) app.addSchema(schema);
  // SECRET_KEY, else the random key the migrations made (never a public default, in any mode).
  await app.register(secretKey);
  await app.register(auth);

  app.get(
    '/',
    {
      schema: {
        tags: ['ops'],
        summary: 'Redirect to the docs',
        response: { 302: Type.Unsafe<void>({ type: 'null', description: 'Location: /docs' }) },
      },
    },
    async (_request, reply) => reply.redirect('/docs', 302),
  );
  app.get(
    '/apispec.json',
    {
      schema: {
        tags: ['ops'],
        summary: 'The OpenAPI document',
        description: 'The same document as /docs/json, where the Flask backend serves it.',
        response: { 200: Type.Object({}, { additionalProperties: true, description: 'OpenAPI 3.0.3' }) },
      },
    },
    async () => app.swagger(),
  );

  // Cookies are the token routes' only (the refresh token, the OAuth2 state): their parsing and
  // setting hooks run there, not on every request of the API.
  await app.register(async (tokenScope) => {
    await tokenScope.register(cookies);
    await tokenScope.register(tokensRoutes, { prefix: '/api' });
  });
  await app.register(usersRoutes, { prefix: '/api' });
  await app.register(postsRoutes, { prefix: '/api' });
  // Live updates: the event log's listener (one connection), the streams of this process, pruning.
  await app.register(eventStreamPlugin, {
    url: config.events.databaseUrl ?? app.database.url,
    channel: eventChannel(app.database.schema),
    log: createEventsRepository(app.database.db),
    settings: config.events,
  });
  await app.register(eventsRoutes, { prefix: '/api' });
  return app;
}
