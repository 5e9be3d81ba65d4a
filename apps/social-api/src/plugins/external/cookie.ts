import fp from 'fastify-plugin';
import cookie from '@fastify/cookie';

/** Cookie parsing and setting; signed cookies (the OAuth2 state) use SECRET_KEY. */
export default fp(
  async function cookies(app) {
    await app.register(cookie, { secret: app.config.secretKey, hook: 'onRequest' });
  },
  { name: 'cookies', decorators: { fastify: ['config'] }, fastify: '5.x' },
);
