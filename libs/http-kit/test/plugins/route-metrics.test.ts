import Fastify from 'fastify';
import { Registry } from 'prom-client';
import { routeMetrics } from '../../src';

test('route-metrics records each answered request in a histogram per method, route and status', async () => {
  const register = new Registry();
  const app = Fastify();
  await app.register(routeMetrics, { register });
  app.get('/things/:id', async () => ({}));
  await app.inject('/things/1');
  await app.inject('/things/2');
  const text = await register.metrics();
  expect(text).toMatch(/^# TYPE http_request_duration_seconds histogram$/m);
  expect(text).toMatch(
    /^http_request_duration_seconds_count\{method="GET",route="\/things\/:id",status_code="200"\} 2$/m,
  );
  await app.close();
});
