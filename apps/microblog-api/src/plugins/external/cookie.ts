import fp from 'fastify-plugin';
import cookie from '@fastify/cookie';

/** Cookie parsing and setting (the panel's client id, see `plugins/app/client-id.ts`). */
export default fp(
  async function cookies(app) {
    await app.register(cookie, { hook: 'onRequest' });
  },
  { name: 'cookies', fastify: '5.x' },
);
