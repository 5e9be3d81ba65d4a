import Fastify from 'fastify';
import { Histogram, Registry } from 'prom-client';
import { ROUTE_DURATION_BUCKETS, RouteDurations, routeMetrics, UNKNOWN_ROUTE } from '../src';

/** Observations across several label sets, on and around the bucket bounds. */
const OBSERVATIONS: [method: string, route: string, status: number, seconds: number][] = [
  ['GET', '/api/posts', 200, 0],
  ['GET', '/api/posts', 200, 0.005],
  ['GET', '/api/posts', 200, 0.0050001],
  ['GET', '/api/posts', 200, 0.3],
  ['GET', '/api/posts', 200, 10],
  ['GET', '/api/posts', 200, 12.5],
  ['GET', '/api/posts', 404, 0.02],
  ['POST', '/api/posts', 201, 1.5],
  ['GET', '/api/users/:id', 200, 0.001],
  ['GET', UNKNOWN_ROUTE, 404, 0.0001],
  ['GET', '/a "quoted\\ route\nname"', 200, 0.07],
];

function both() {
  const ours = new Registry();
  const durations = new RouteDurations();
  ours.registerMetric(durations as never);
  const theirs = new Registry();
  const histogram = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'request duration in seconds',
    labelNames: ['method', 'route', 'status_code'],
    registers: [theirs],
  });
  for (const [method, route, status, seconds] of OBSERVATIONS) {
    durations.observe(method, route, status, seconds);
    histogram.observe({ method, route, status_code: status }, seconds);
  }
  return { ours, theirs };
}

describe('RouteDurations', () => {
  test('exposes exactly what prom-client’s own Histogram exposes for the same observations', async () => {
    const { ours, theirs } = both();
    const text = await ours.metrics();
    expect(text).toBe(await theirs.metrics());
    // Spot checks of what that text says.
    const line = (le: string) =>
      new RegExp(
        `^http_request_duration_seconds_bucket\\{le="${le}",method="GET",route="/api/posts",status_code="200"\\} (\\d+)$`,
        'm',
      ).exec(text)?.[1];
    expect(line('0.005')).toBe('2');
    expect(line('0.01')).toBe('3');
    expect(line('0.5')).toBe('4');
    expect(line('10')).toBe('5');
    expect(line('\\+Inf')).toBe('6');
    expect(text).toMatch(
      /^http_request_duration_seconds_count\{method="POST",route="\/api\/posts",status_code="201"\} 1$/m,
    );
    expect(text).toContain('route="/a \\"quoted\\\\ route\\nname\\""');
    expect(ROUTE_DURATION_BUCKETS).toEqual([0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]);
  });

  test('reports the same JSON as prom-client, and a registry reset empties it', async () => {
    const { ours, theirs } = both();
    // prom-client's carry `exemplar: null` (exemplars are off): the rest is the same.
    const withoutExemplars = (metrics: Awaited<ReturnType<Registry['getMetricsAsJSON']>>) =>
      metrics.map((m) => ({
        ...m,
        values: m.values.map(({ exemplar: _, ...v }: Record<string, unknown>) => v),
      }));
    expect(withoutExemplars(await ours.getMetricsAsJSON())).toEqual(
      withoutExemplars(await theirs.getMetricsAsJSON()),
    );
    ours.resetMetrics();
    expect(await ours.metrics()).toBe(
      '# HELP http_request_duration_seconds request duration in seconds\n# TYPE http_request_duration_seconds histogram\n',
    );
  });
});

describe('routeMetrics', () => {
  async function app(register: Registry) {
    const server = Fastify();
    await server.register(routeMetrics, { register });
    server.get('/slow/:id', async () => {
      await new Promise((resolve) => setTimeout(resolve, 60));
      return { ok: true };
    });
    server.get('/fails', async () => {
      throw Object.assign(new Error('nope'), { statusCode: 409 });
    });
    server.route({ method: 'OPTIONS', url: '/slow/:id', handler: async () => 'options' });
    await server.ready();
    return server;
  }
  const count = (text: string, method: string, route: string, status: number) =>
    Number(
      new RegExp(
        `^http_request_duration_seconds_count\\{method="${method}",route="${route}",status_code="${status}"\\} (\\S+)$`,
        'm',
      ).exec(text)?.[1] ?? 0,
    );

  test('each answered request counts once under its route pattern, method and status, with its real duration', async () => {
    const register = new Registry();
    const server = await app(register);
    await server.inject('/slow/1');
    await server.inject('/slow/2');
    await server.inject('/fails');
    await server.inject('/nowhere');
    await server.inject({ method: 'POST', url: '/slow/3' });
    const text = await register.metrics();
    expect(count(text, 'GET', '/slow/:id', 200)).toBe(2);
    expect(count(text, 'GET', '/fails', 409)).toBe(1);
    // A request no route matched (404, or a method the path lacks) is one route: no label per URL.
    expect(count(text, 'GET', UNKNOWN_ROUTE, 404)).toBe(1);
    expect(count(text, 'POST', UNKNOWN_ROUTE, 404)).toBe(1);
    expect(text).not.toMatch(/route="\/nowhere"|route="\/slow\/1"/);
    // Timed from Fastify's start of the request: two 60 ms handlers.
    const sum = Number(
      /^http_request_duration_seconds_sum\{method="GET",route="\/slow\/:id",status_code="200"\} (\S+)$/m.exec(
        text,
      )?.[1],
    );
    expect(sum).toBeGreaterThanOrEqual(0.11);
    expect(sum).toBeLessThan(5);
    expect(text).toMatch(
      /^http_request_duration_seconds_bucket\{le="0\.05",method="GET",route="\/slow\/:id",status_code="200"\} 0$/m,
    );
    await server.close();
  });

  test('a second app on the same registry replaces the first one’s histogram instead of failing to start', async () => {
    const register = new Registry();
    const first = await app(register);
    const second = await app(register);
    await first.inject('/fails');
    await second.inject('/slow/1');
    const text = await register.metrics();
    expect(count(text, 'GET', '/slow/:id', 200)).toBe(1);
    expect(count(text, 'GET', '/fails', 409)).toBe(0);
    await Promise.all([first.close(), second.close()]);
  });

  test('HEAD and OPTIONS routes are not measured (as fastify-metrics did not)', async () => {
    const register = new Registry();
    const server = await app(register);
    expect((await server.inject({ method: 'HEAD', url: '/slow/1' })).statusCode).toBe(200);
    expect((await server.inject({ method: 'OPTIONS', url: '/slow/1' })).statusCode).toBe(200);
    const text = await register.metrics();
    expect(text).not.toMatch(/method="HEAD"|method="OPTIONS"/);
    await server.close();
  });
});
