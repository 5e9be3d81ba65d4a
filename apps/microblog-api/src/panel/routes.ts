import { join } from 'node:path';
import type { FastifyPluginAsync } from 'fastify';
import fastifyStatic from '@fastify/static';
import { Type } from '@sinclair/typebox';

/** The classroom panel: plain HTML, JS and CSS from `public/`, no build step. */
export const PUBLIC_DIR = join(__dirname, '..', '..', 'public');

const panelRoutes: FastifyPluginAsync = async (app) => {
  // Each file gets its own route (no wildcard), so unknown paths stay 404 and POST / stays 405.
  await app.register(fastifyStatic, { root: PUBLIC_DIR, wildcard: false, index: false, serve: true });
  app.get(
    '/',
    {
      schema: {
        tags: ['panel'],
        summary: 'The browser panel',
        description:
          'The classroom microblog panel (HTML; loads /panel.js and /panel.css from this service).',
        produces: ['text/html'],
        response: { 200: Type.String({ description: 'HTML page' }) },
      },
    },
    (_request, reply) => reply.type('text/html; charset=utf-8').sendFile('index.html'),
  );
};

export default panelRoutes;
