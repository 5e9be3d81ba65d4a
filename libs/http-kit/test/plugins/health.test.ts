import Fastify from 'fastify';
import { errorHandling, health, shutdown } from '../../src';
import { errorHandlingOptions } from './dialect';

test('health answers /healthz always and /readyz as readiness says, 503 once leaving', async () => {
  let ready = true;
  const app = Fastify();
  await app.register(errorHandling, errorHandlingOptions);
  await app.register(shutdown);
  await app.register(health, {
    readiness: async () => {
      if (!ready) throw new Error('database away');
    },
  });
  expect((await app.inject('/healthz')).json()).toEqual({ status: 'ok' });
  expect((await app.inject('/readyz')).json()).toEqual({ status: 'ready' });
  ready = false;
  const away = await app.inject('/readyz');
  expect(away.statusCode).toBe(503);
  expect(away.headers['retry-after']).toBe('5');
  expect((await app.inject('/healthz')).statusCode).toBe(200);
  ready = true;
  app.beginLeaving();
  expect((await app.inject('/readyz')).statusCode).toBe(503);
  await app.close();
});
