import type { FastifyInstance } from 'fastify';
import type { Database } from '@platform/db';
import { createServiceApp } from '@platform/http-kit';
import { BODY_LIMIT, type Config } from './config';
import type { MicroblogDatabase } from './db/schema';
import { migrations } from './db/migrations';
import { problemDetailsDialect } from './errors';
import writeRateLimit from './plugins/external/rate-limit';
import panelRoutes from './panel/routes';
import postsRoutes from './posts/routes';

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
Writes (post, reply, reaction) share one rate limit per client address (\`WRITE_RATE_LIMIT\`, default 60/minute);
over it the answer is 429 with \`Retry-After\`. Any origin may call the API (CORS, no credentials).

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
      tags: [
        { name: 'posts', description: 'Posts, replies and reactions' },
        { name: 'panel', description: 'The browser panel' },
      ],
    },
    cors: {
      origins: config.corsOrigins,
      methods: ['GET', 'HEAD', 'POST'],
      allowedHeaders: ['content-type'],
      exposedHeaders: ['link', 'retry-after'],
    },
  });
  await app.register(writeRateLimit, { perMinute: config.writeRateLimit });

  await app.register(panelRoutes);
  await app.register(postsRoutes, { prefix: '/api' });
  return app;
}
