import Fastify from 'fastify';
import { errorHandling, metricsPlugin } from '../../src';
import { errorHandlingOptions } from './dialect';

test('metrics exposes the Prometheus text at /metrics, behind the token when one is set', async () => {
  const app = Fastify();
  await app.register(errorHandling, errorHandlingOptions);
  await app.register(metricsPlugin, { metricsToken: 'secret-token' });
  const refused = await app.inject('/metrics');
  expect(refused.statusCode).toBe(401);
  expect(refused.headers['www-authenticate']).toBe('Bearer');
  const res = await app.inject({ url: '/metrics', headers: { authorization: 'Bearer secret-token' } });
  expect(res.statusCode).toBe(200);
  expect(res.headers['content-type']).toMatch(/^text\/plain/);
  expect(res.body).toMatch(/^# HELP process_cpu_user_seconds_total/m);
  await app.close();
});
