import type { FastifyInstance } from 'fastify';
import { eventChannel, type Database } from '@platform/db';
import { createServiceApp, eventStreamPlugin, openApiTags } from '@platform/http-kit';
import { BODY_LIMIT, type Config } from './config';
import type { MicroblogDatabase } from './db/schema';
import { migrations } from './db/migrations';
import { problemDetailsDialect } from './errors';
import clientIds from './plugins/app/client-id';
import cookies from './plugins/external/cookie';
import writeRateLimit from './plugins/external/rate-limit';
import { createEventsRepository } from './events/repository';
import eventsRoutes from './events/routes';
import panelRoutes from './panel/routes';
import postsRoutes from './posts/routes';
import { Post, Reply } from './posts/schemas';

declare module 'fastify' {
  interface FastifyInstance {
    database: Database<MicroblogDatabase>;
    config: Config;
  }
}

export interface AppDependencies {
  /** An open database to use instead of opening one from `config.database` (tests). */
  database?: Database<MicroblogDatabase>;
}

const DESCRIPTION = `Anonymous classroom microblog for the "Digital Citizenship Quest": list, post, reply, react.

Errors are RFC 9457 problem details (\`application/problem+json\`) with an \`errors\` list on validation failures.
Write limits (post, reply and reaction count together; reads are not limited): the panel at \`/\` gives each
browser a signed, HttpOnly client id cookie (\`microblog_client\`) on its first load, which its writes carry. A write
with a valid client id counts against its browser's budget (\`WRITE_LIMIT_PER_CLIENT\`, default 60/minute) and against
a much higher ceiling shared by all browsers of one address, a classroom behind one router (\`WRITE_LIMIT_PER_ADDRESS\`,
default 1200/minute); a write without one (scripts, curl, a forged cookie) counts against a stricter budget per address
(\`WRITE_LIMIT_WITHOUT_CLIENT_ID\`, default 30/minute). A script may load \`/\` once and send its cookie back to get a
browser's budget. Over a limit the answer is 429 with \`Retry-After\` (seconds) and a \`detail\` naming the limit.
Any origin may call the API (CORS, no credentials: the client id counts only on the panel's own origin).

Choices where the contract is silent: a \`post_id\` that is well-formed but beyond the id range answers 404
(it names no post); \`before\` must be 1..2147483647; an empty body on a POST is a 400; a body that is not
\`application/json\` is a 415; \`student_name: null\` on a reply means anonymous, like leaving it out.`;

/** Builds the service (not listening): the same instance `main.ts` serves and tests inject into. */
export async function buildApp(config: Config, deps: AppDependencies = {}): Promise<FastifyInstance> {
  const app = await createServiceApp({
    config,
    bodyLimit: BODY_LIMIT,
    dialect: problemDetailsDialect,
    // Bodies are JSON objects; an empty body on a POST is a 400.
    requestRules: { trim: true, rejectNul: true, jsonOnly: true, emptyBody: 'reject' },
    migrations,
    database: deps.database,
    docs: {
      title: 'microblog-api',
      description: DESCRIPTION,
      version: '1.0.0',
      tags: openApiTags({
        posts: 'Posts, replies and reactions',
        panel: 'The browser panel',
      }),
    },
    cors: {
      origins: config.corsOrigins,
      methods: ['GET', 'HEAD', 'POST'],
      allowedHeaders: ['content-type'],
      exposedHeaders: ['link', 'retry-after'],
    },
  });
  // Named components of the document (`#/components/schemas/Post`), referenced by the routes and events.
  for (const schema of [Reply, Post]) app.addSchema(schema);
  await app.register(cookies);
  await app.register(clientIds);
  await app.register(writeRateLimit, config.writeLimits);

  await app.register(eventStreamPlugin, {
    url: config.events.databaseUrl ?? app.database.url,
    channel: eventChannel(app.database.schema),
    log: createEventsRepository(app.database.db),
    settings: config.events,
  });

  await app.register(panelRoutes);
  await app.register(postsRoutes, { prefix: '/api' });
  await app.register(eventsRoutes, { prefix: '/api' });
  return app;
}
