import fp from 'fastify-plugin';
import cookie from '@fastify/cookie';

/** Cookie parsing and setting (the session cookie the connect page gets, see `plugins/app/session-cookies.ts`). */
export default fp(
  async function cookies(app) {
    await app.register(cookie, { hook: 'onRequest' });
  },
  { name: 'cookies', fastify: '5.x' },
);
