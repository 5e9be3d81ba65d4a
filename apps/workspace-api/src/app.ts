import type { FastifyInstance } from 'fastify';
import type { Database } from '@platform/db';
import { createServiceApp, openApiTags } from '@platform/http-kit';
import { BODY_LIMIT, type Config } from './config';
import type { WorkspaceDatabase } from './db/schema';
import { migrations } from './db/migrations';
import { kasmDialect } from './errors';
import apiKeyAuth from './plugins/app/auth';
import { ensureBootstrapKey } from './auth/bootstrap';
import authRoutes from './auth/routes';
import usersRoutes from './users/routes';
import groupsRoutes from './groups/routes';
import { User, UserWithKasms } from './users/schemas';
import { Group } from './groups/schemas';
import { Image } from './images/schemas';
import { Kasm, UserKasm } from './sessions/schemas';
import imagesRoutes from './images/routes';
import sessionsPlugin from './plugins/app/sessions';
import sessionUpkeep from './plugins/app/session-upkeep';
import cookies from './plugins/external/cookie';
import sessionCookies from './plugins/app/session-cookies';
import connectRoutes from './sessions/connect-routes';
import sessionProxy from './sessions/proxy';
import sessionsRoutes from './sessions/routes';
import type { SessionEngine } from './sessions/engine';
import { engineFromConfig } from './sessions/engine/from-config';

declare module 'fastify' {
  interface FastifyInstance {
    database: Database<WorkspaceDatabase>;
    config: Config;
  }
}

export interface AppDependencies {
  /** An open database to use instead of opening one from `config.database` (tests). */
  database?: Database<WorkspaceDatabase>;
  /**
   * The container engine sessions run on, instead of the one `SESSIONS_ENGINE` names (tests give the
   * in-process one); the caller closes it.
   */
  engine?: SessionEngine;
}

const DESCRIPTION = `User, group and workspace management, wire-compatible with Kasm Workspaces' developer API
(\`/api/public/*\`): every operation is \`POST /api/public/<operation>\` with a JSON body carrying
\`api_key\` and \`api_key_secret\` (or the \`api-key\`/\`api-key-secret\` headers, which win).

Ids are UUIDs as 32 lowercase hex characters (dashed input accepted); datetimes are UTC
\`YYYY-MM-DD HH:MM:SS.ffffff\`; errors are \`{"error_message": "..."}\` with Kasm's statuses: 400 for bad
input and unknown entities, 401 for missing permissions or an expired key, 403 for bad credentials.

Sessions (\`request_kasm\`, \`get_kasm_status\`, \`get_kasms\`, \`keepalive\`, \`destroy_kasm\`, \`exec_command_kasm\`) run
each workspace as a container on the configured engine (\`SESSIONS_ENGINE\`: the Docker Engine API, or an in-process
stand-in for demos and tests); without one they answer 400 and everything else works. The other session operations of
Kasm's API answer 400 \`Unsupported request: <operation> is not available on this server\`.
A session's \`kasm_url\` (\`/#/connect/kasm/<kasm_id>/<user_id>/<token>\`) opens the connect page at \`/\`, which
exchanges the one-time token (\`POST /connect\`) for a cookie of that session and opens the workspace through this
service's reverse proxy at \`/session/<kasm_id>/\` (HTTP and WebSocket, the session's owner only; what the workspace
serves there is not part of this document).

Choices where the contract is silent: group names are unique as written (case-sensitive); a malformed
\`page\`/\`page_size\` type is a 400 like any wrong type; an id that is not a string is a 400 type error
while a string that is not a UUID is answered like an unknown id.`;

/** Builds the service (not listening): the same instance `main.ts` serves and tests inject into. */
export async function buildApp(config: Config, deps: AppDependencies = {}): Promise<FastifyInstance> {
  const app = await createServiceApp({
    config,
    bodyLimit: BODY_LIMIT,
    dialect: kasmDialect,
    // A POST without a body (credentials in the headers only) is an empty operation body; an empty
    // JSON body is still a 400.
    requestRules: { trim: true, rejectNul: true, jsonOnly: true, emptyBody: 'as-empty-object' },
    notFoundDetail: 'Not Found',
    secretHeaders: ['api-key-secret'],
    migrations,
    database: deps.database,
    docs: {
      title: 'workspace-api',
      description: DESCRIPTION,
      version: '1.0.0',
      tags: openApiTags({
        credentials: 'API key checks',
        users: 'Users',
        groups: 'Groups and memberships',
        images: 'Workspaces (images) and the groups allowed to use them',
        sessions: 'Sessions: workspaces running as containers, started, reached, kept alive and destroyed',
      }),
      openapi: {
        components: {
          securitySchemes: {
            apiKeyHeader: { type: 'apiKey', in: 'header', name: 'api-key' },
            apiKeySecretHeader: { type: 'apiKey', in: 'header', name: 'api-key-secret' },
          },
        },
      },
    },
    cors: {
      origins: config.corsOrigins,
      methods: ['GET', 'POST'],
      allowedHeaders: ['content-type', 'api-key', 'api-key-secret'],
    },
  });
  if (config.bootstrapKey) await ensureBootstrapKey(app, config.bootstrapKey);
  // Named components of the document (`#/components/schemas/User`…), referenced by the operations.
  for (const schema of [UserKasm, Kasm, Group, User, UserWithKasms, Image]) app.addSchema(schema);
  await app.register(apiKeyAuth, { protectedPrefix: '/api/public' });
  await app.register(sessionsPlugin, {
    engine: deps.engine ?? engineFromConfig(config),
    ownsEngine: deps.engine === undefined,
  });
  await app.register(sessionUpkeep);
  await app.register(cookies);
  await app.register(sessionCookies);

  await app.register(authRoutes, { prefix: '/api/public' });
  await app.register(usersRoutes, { prefix: '/api/public' });
  await app.register(groupsRoutes, { prefix: '/api/public' });
  await app.register(imagesRoutes, { prefix: '/api/public' });
  await app.register(sessionsRoutes, { prefix: '/api/public' });
  // Reaching a session: the connect page and its token exchange, then the proxy to the workspace.
  await app.register(connectRoutes);
  const engine = app.sessions.engine;
  if (engine) await app.register(sessionProxy, { prefix: '/session/:kasm_id', engine });
  return app;
}
