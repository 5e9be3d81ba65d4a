import { openForTheseTests } from '@platform/testing';
import { buildTestApp } from './support/app';
import { OPERATIONS_BY_TAG } from './support/operations';

const OPERATIONS = Object.values(OPERATIONS_BY_TAG).flat();

/** The OpenAPI document describes every operation completely; the operator endpoints answer. */
describe('docs and operator endpoints', () => {
  const t = openForTheseTests(() => buildTestApp(), 60_000);
  let doc: any;
  beforeAll(async () => {
    doc = (await t().app.inject('/docs/json')).json();
  });

  test('the document lists exactly the contract operations under /api/public', () => {
    const paths = Object.keys(doc.paths)
      .filter((p) => p.startsWith('/api/public/'))
      .map((p) => p.slice('/api/public/'.length));
    expect(paths.sort()).toEqual([...OPERATIONS].sort());
    expect(Object.keys(doc.paths['/api/public/validate_credentials']).sort()).toEqual(['get', 'post']);
  });

  test.each(OPERATIONS)(
    '%s: tag, summary, permission, API-key security, body, success and Kasm error responses',
    (op) => {
      const route = doc.paths[`/api/public/${op}`].post;
      expect(route.tags).toHaveLength(1);
      expect(route.summary).toEqual(expect.any(String));
      expect(route.description).toMatch(/Permission: \*\*/);
      expect(route.security).toEqual([{ apiKeyHeader: [], apiKeySecretHeader: [] }]);
      expect(route.requestBody.content['application/json'].schema.properties).toHaveProperty('api_key');
      expect(route.responses['200']).toBeDefined();
      for (const status of ['400', '401', '403', '500', '503']) {
        expect(route.responses[status].content['application/json'].schema.$ref).toBe(
          '#/components/schemas/KasmError',
        );
      }
    },
  );

  test("the error component is this service's KasmError only, no other service's error body", () => {
    const schemas = Object.keys(doc.components.schemas);
    expect(schemas).toContain('KasmError');
    for (const other of ['ProblemDetails', 'FieldError', 'SocialError']) expect(schemas).not.toContain(other);
  });

  test('the security schemes are the Kasm headers, so "try it" works from /docs', async () => {
    expect(doc.components.securitySchemes).toEqual({
      apiKeyHeader: { type: 'apiKey', in: 'header', name: 'api-key' },
      apiKeySecretHeader: { type: 'apiKey', in: 'header', name: 'api-key-secret' },
    });
    const ui = await t().app.inject('/docs/');
    expect(ui.statusCode).toBe(200);
    expect(ui.headers['content-type']).toMatch(/text\/html/);
  });

  test('healthz, readyz and metrics answer without credentials', async () => {
    expect((await t().app.inject('/healthz')).json()).toEqual({ status: 'ok' });
    expect((await t().app.inject('/readyz')).json()).toEqual({ status: 'ready' });
    await t().call('get_users');
    const metrics = await t().app.inject('/metrics');
    expect(metrics.body).toMatch(
      /http_request_duration_seconds_count\{method="POST",route="\/api\/public\/get_users",status_code="200"\}/,
    );
  });
});
