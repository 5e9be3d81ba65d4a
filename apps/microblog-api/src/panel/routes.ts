import { join } from 'node:path';
import type { FastifyPluginAsync } from 'fastify';
import fastifyStatic from '@fastify/static';
import { Type } from '@sinclair/typebox';
import { CLIENT_ID_COOKIE, CLIENT_ID_MAX_AGE_SECONDS } from '../plugins/app/client-id';
import { BUILT_PUBLIC_DIR, bundlePanel } from './bundle';

/** The classroom panel's HTML and CSS, served as they are written. */
export const PUBLIC_DIR = join(__dirname, '..', '..', 'public');

/**
 * Running from source (tsx, the tests): no build has written the panel's script, so it is bundled
 * from panel/src on each request (an edit shows on reload). Running the build (npm start, the image):
 * the script the build wrote, dist/public/panel.js, is a static file like the others.
 */
const FROM_SOURCE = __filename.endsWith('.ts');

const panelRoutes: FastifyPluginAsync = async (app) => {
  // Each file gets its own route (no wildcard), so unknown paths stay 404 and POST / stays 405.
  await app.register(fastifyStatic, {
    root: FROM_SOURCE ? PUBLIC_DIR : [PUBLIC_DIR, BUILT_PUBLIC_DIR],
    wildcard: false,
    index: false,
    serve: true,
  });
  if (FROM_SOURCE)
    app.get('/panel.js', { schema: { hide: true } }, async (_request, reply) => {
      reply.header('cache-control', 'no-cache');
      return reply.type('application/javascript; charset=utf-8').send(await bundlePanel());
    });
  app.get(
    '/',
    {
      schema: {
        tags: ['panel'],
        summary: 'The browser panel',
        description:
          'The classroom microblog panel (HTML; loads /panel.js and /panel.css from this service). ' +
          'A browser without a valid client id gets one here: `Set-Cookie: microblog_client=<id>.<signature>; ' +
          `Max-Age=${CLIENT_ID_MAX_AGE_SECONDS}; Path=/; HttpOnly; SameSite=Lax` +
          '` (and `Secure` over HTTPS). ' +
          'The panel’s writes carry it, so they count against that browser’s write budget.',
        produces: ['text/html'],
        response: {
          200: Type.String({
            description: 'HTML page',
            headers: {
              'Set-Cookie': {
                type: 'string',
                description: `The signed client id (\`${CLIENT_ID_COOKIE}\`), when the request carried no valid one`,
              },
            },
          }),
          // `sendFile` answers a conditional request for the page it sent before (its ETag or date).
          304: Type.Unsafe<void>({
            type: 'null',
            description: 'Not Modified: the browser’s copy (`If-None-Match`, `If-Modified-Since`) is current',
          }),
        },
      },
    },
    async (request, reply) => {
      await app.clientIds.ensure(request, reply);
      // Per browser: a shared cache (a school proxy) must not hand one browser's id to another.
      reply.header('cache-control', 'private, no-cache');
      return reply.type('text/html; charset=utf-8').sendFile('index.html', { cacheControl: false });
    },
  );
};

export default panelRoutes;
