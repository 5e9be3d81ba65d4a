import fp from 'fastify-plugin';
import cookie, { sign, unsign } from '@fastify/cookie';

/**
 * Cookie parsing and setting; signed cookies (the OAuth2 state) use the service's secret key
 * (SECRET_KEY, else the database's), asked for at each use since it may be read after start.
 */
export default fp(
  async function cookies(app) {
    const key = app.secretKey;
    await app.register(cookie, {
      secret: {
        sign: (value) => sign(value, key.current()),
        unsign: (value) => unsign(value, key.current()),
      },
      hook: 'onRequest',
    });
  },
  { name: 'cookies', dependencies: ['secret-key'], fastify: '5.x' },
);
