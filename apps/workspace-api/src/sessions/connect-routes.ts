import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { errorResponses } from '@platform/http-kit';
import { ConnectRefused, kasmDialect } from '../errors';
import {
  SESSION_COOKIE,
  SESSION_COOKIE_MAX_AGE_SECONDS,
  sessionPathOf,
} from '../plugins/app/session-cookies';
import { KasmId, parseId, toKasmId } from '../wire/kasm';
import { createConnectRepository } from './connect-repository';
import { hashConnectToken } from './tokens';

/** The connect page and its script, served as they are written (no build step, no CDN). */
export const PUBLIC_DIR = join(__dirname, '..', '..', 'public');

const ConnectBody = Type.Object(
  {
    kasm_id: Type.String({ maxLength: 64, description: 'The session (`kasm_id` of the kasm_url)' }),
    user_id: Type.String({ maxLength: 64, description: 'Its owner (`user_id` of the kasm_url)' }),
    token: Type.String({ maxLength: 128, description: 'The one-time token (last segment of the kasm_url)' }),
  },
  { description: 'What the kasm_url\u2019s fragment holds: `#/connect/kasm/<kasm_id>/<user_id>/<token>`' },
);

const ConnectResponse = Type.Object(
  {
    kasm_id: KasmId,
    user_id: KasmId,
    operational_status: Type.Union(
      [Type.Literal('requested'), Type.Literal('starting'), Type.Literal('running')],
      { description: 'The session\u2019s state now (its proxy answers 503 until it runs)' },
    ),
    session_url: Type.String({
      pattern: '^/session/[0-9a-f]{32}/$',
      description:
        'Where the workspace is reached (this service\u2019s reverse proxy), with the cookie just set',
    }),
  },
  { description: 'The token is exchanged: the session cookie is set' },
);

/**
 * Reaching a session from its `kasm_url`: the connect page at `/` (Kasm's URL shape keeps everything
 * after `#`, which browsers never send) reads the fragment and exchanges the one-time token at
 * `POST /connect` for the session's cookie, then opens `/session/<kasm_id>/` (see `proxy.ts`).
 */
const connectRoutes: FastifyPluginAsync = async (app) => {
  const connect = createConnectRepository(app.database.db);
  const [page, script] = await Promise.all([
    readFile(join(PUBLIC_DIR, 'connect.html'), 'utf8'),
    readFile(join(PUBLIC_DIR, 'connect.js'), 'utf8'),
  ]);

  app.get(
    '/',
    {
      schema: {
        tags: ['sessions'],
        summary: 'The connect page',
        description:
          'A `kasm_url` (`/#/connect/kasm/<kasm_id>/<user_id>/<token>`) opens this page, whose script (`/connect.js`, ' +
          'same origin) reads the fragment, removes it from the address bar and history, exchanges the token at ' +
          '`POST /connect` and opens the workspace at `/session/<kasm_id>/`. Without a kasm_url fragment it says ' +
          'what it is for.',
        produces: ['text/html'],
        response: { 200: Type.String({ description: 'HTML page' }) },
      },
    },
    async (_request, reply) =>
      reply.header('cache-control', 'no-cache').type('text/html; charset=utf-8').send(page),
  );

  app.get('/connect.js', { schema: { hide: true } }, async (_request, reply) =>
    reply.header('cache-control', 'no-cache').type('application/javascript; charset=utf-8').send(script),
  );

  app.post<{ Body: Static<typeof ConnectBody> }>(
    '/connect',
    {
      schema: {
        tags: ['sessions'],
        summary: 'Exchange a connect token for a session cookie',
        description:
          'The connect page\u2019s exchange: `kasm_id`, `user_id` and `token` from a kasm_url (request_kasm\u2019s, or a ' +
          'fresh one from get_kasm_status). The token is single-use and expires 10 minutes after it was issued; ' +
          'each get_kasm_status replaces it. When it is the session\u2019s current token, `user_id` is the ' +
          'session\u2019s owner and the session is requested, starting or running, the token is spent and the ' +
          `answer sets the cookie \`${SESSION_COOKIE}\` (\`Path=/session/<kasm_id>; HttpOnly; SameSite=Strict; ` +
          `Max-Age=${SESSION_COOKIE_MAX_AGE_SECONDS}\`, and \`Secure\` over HTTPS): signed by the service, it opens ` +
          'that session only, for as long as the session runs. Anything else (an unknown, used, expired or ' +
          'replaced token, another user, a session that is over, malformed ids) is one 403, which spends ' +
          'nothing. No API key: the token is the credential.',
        body: ConnectBody,
        response: {
          200: {
            ...ConnectResponse,
            headers: {
              'Set-Cookie': {
                type: 'string',
                description: `The session cookie (\`${SESSION_COOKIE}\`)`,
              },
            },
          },
          ...errorResponses(kasmDialect, [400, 403, 413, 415]),
        },
      },
    },
    async (request, reply) => {
      const { kasm_id, user_id, token } = request.body;
      const id = parseId(kasm_id);
      const userId = parseId(user_id);
      const session =
        id && userId && token
          ? await connect.consumeConnectToken(id, userId, hashConnectToken(token))
          : undefined;
      if (!session) throw new ConnectRefused();
      const kasmId = toKasmId(session.id);
      await app.sessionCookies.issue(reply, kasmId, toKasmId(session.user_id));
      // Per browser: no shared cache may keep an answer that sets a cookie.
      reply.header('cache-control', 'no-store');
      return {
        kasm_id: kasmId,
        user_id: toKasmId(session.user_id),
        operational_status: session.state as Static<typeof ConnectResponse>['operational_status'],
        session_url: sessionPathOf(kasmId),
      };
    },
  );
};

export default connectRoutes;
