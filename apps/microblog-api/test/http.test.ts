/**
 * Contract tests of what surrounds the API, over real HTTP (`fetch` against `startTestServer()`):
 * CORS (preflight and simple requests, restricted origins), the OpenAPI document and /docs,
 * /healthz, /readyz, /metrics and request ids.
 */
import { buildTestApp } from './support/app';
import { startTestServer, type TestServer } from './support/server';

const ALLOWED_ORIGIN = 'http://localhost:4500';
const API_ROUTES = [
  { method: 'get', path: '/api/microblog', success: '200', errors: ['400', '500', '503'] },
  // The live stream (test/events.test.ts): 503 also when its cap of open streams is reached.
  { method: 'get', path: '/api/microblog/events', success: '200', errors: ['400', '500', '503'] },
  {
    method: 'post',
    path: '/api/microblog',
    success: '201',
    errors: ['400', '413', '415', '429', '500', '503'],
  },
  {
    method: 'post',
    path: '/api/microblog/reply',
    success: '201',
    errors: ['400', '404', '413', '415', '429', '500', '503'],
  },
  {
    method: 'post',
    path: '/api/microblog/reaction',
    success: '200',
    errors: ['400', '404', '413', '415', '429', '500', '503'],
  },
] as const;

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});

afterAll(async () => {
  await server?.close();
});

const url = (path: string, base = server.baseUrl) => `${base}${path}`;

const list = (header: string | null) =>
  (header ?? '')
    .split(',')
    .map((v) => v.trim().toLowerCase())
    .filter(Boolean);

async function createPost(base = server.baseUrl, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url('/api/microblog', base), {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ content: 'Over real HTTP', quest_topic: 'digital_literacy', student_name: 'Ada' }),
  });
}

// ---------------------------------------------------------------------------------------------

describe('CORS (any origin, no credentials)', () => {
  const preflight = (path: string, origin = ALLOWED_ORIGIN, base = server.baseUrl) =>
    fetch(url(path, base), {
      method: 'OPTIONS',
      headers: {
        Origin: origin,
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'content-type',
      },
    });

  test.each(['/api/microblog', '/api/microblog/reply', '/api/microblog/reaction'])(
    'answers the preflight of a JSON POST to %s with 204',
    async (path) => {
      const res = await preflight(path);
      expect(res.status).toBe(204);
      expect(res.headers.get('access-control-allow-origin')).toBe('*');
      expect(list(res.headers.get('access-control-allow-methods'))).toContain('post');
      expect(list(res.headers.get('access-control-allow-headers'))).toContain('content-type');
      expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    },
  );

  test('a GET with an Origin is allowed for any origin and exposes Link', async () => {
    const res = await fetch(url('/api/microblog'), { headers: { Origin: ALLOWED_ORIGIN } });
    expect(res.status).toBe(200);
    expect(Array.isArray(await res.json())).toBe(true);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(list(res.headers.get('access-control-expose-headers'))).toContain('link');
    expect(res.headers.get('access-control-allow-credentials')).toBeNull();
  });

  test('any other origin is allowed too', async () => {
    const res = await fetch(url('/api/microblog'), { headers: { Origin: 'https://elsewhere.example' } });
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
  });

  test('the actual cross-origin POST gets the CORS header and a JSON body', async () => {
    const res = await createPost(server.baseUrl, { Origin: ALLOWED_ORIGIN });
    expect(res.status).toBe(201);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(((await res.json()) as { content: string }).content).toBe('Over real HTTP');
  });

  test('error responses carry the CORS header too, so the panel can read them', async () => {
    const res = await fetch(url('/api/microblog/reply'), {
      method: 'POST',
      headers: { Origin: ALLOWED_ORIGIN, 'content-type': 'application/json' },
      body: JSON.stringify({ post_id: 987654, content: 'x' }),
    });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
  });

  describe('with CORS_ORIGINS set to one origin', () => {
    let restricted: TestServer;
    const ONLY = 'http://a.example';

    beforeAll(async () => {
      restricted = await startTestServer({ corsOrigins: [ONLY] });
    });

    afterAll(async () => {
      await restricted?.close();
    });

    test('that origin is allowed (preflight and GET)', async () => {
      const pre = await preflight('/api/microblog', ONLY, restricted.baseUrl);
      expect(pre.status).toBe(204);
      expect(pre.headers.get('access-control-allow-origin')).toBe(ONLY);
      const get = await fetch(url('/api/microblog', restricted.baseUrl), { headers: { Origin: ONLY } });
      expect(get.status).toBe(200);
      expect(get.headers.get('access-control-allow-origin')).toBe(ONLY);
      expect(list(get.headers.get('vary'))).toContain('origin');
    });

    test('another origin is not allowed (preflight and GET)', async () => {
      const other = 'http://b.example';
      const pre = await preflight('/api/microblog', other, restricted.baseUrl);
      expect(pre.headers.get('access-control-allow-origin')).toBeNull();
      const get = await fetch(url('/api/microblog', restricted.baseUrl), { headers: { Origin: other } });
      expect(get.headers.get('access-control-allow-origin')).toBeNull();
      const post = await createPost(restricted.baseUrl, { Origin: other });
      expect(post.headers.get('access-control-allow-origin')).toBeNull();
    });
  });
});

describe('OpenAPI document (/docs/json) and /docs', () => {
  type Operation = {
    tags?: string[];
    summary?: string;
    description?: string;
    parameters?: { in: string; name: string; required?: boolean; schema?: Record<string, unknown> }[];
    requestBody?: { content?: Record<string, { schema?: Record<string, unknown> }> };
    responses?: Record<
      string,
      { description?: string; content?: Record<string, { schema?: Record<string, unknown> }> }
    >;
  };
  let doc: {
    openapi: string;
    info: { title: string; version: string };
    paths: Record<string, Record<string, Operation>>;
    components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
  };

  beforeAll(async () => {
    const res = await fetch(url('/docs/json'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    doc = (await res.json()) as typeof doc;
  });

  const operation = (method: string, path: string): Operation => {
    const op = doc.paths[path]?.[method];
    expect(op).toBeDefined();
    return op!;
  };

  test('is an OpenAPI 3 document describing microblog-api', () => {
    expect(doc.openapi).toMatch(/^3\./);
    expect(doc.info.title).toBe('microblog-api');
    expect(typeof doc.info.version).toBe('string');
  });

  test('documents exactly the five API operations under /api', () => {
    const apiOperations = Object.entries(doc.paths)
      .filter(([path]) => path.startsWith('/api'))
      .flatMap(([path, ops]) => Object.keys(ops).map((method) => `${method} ${path}`))
      .sort();
    expect(apiOperations).toEqual(API_ROUTES.map((r) => `${r.method} ${r.path}`).sort());
  });

  test.each(API_ROUTES)('$method $path has tags and a summary/description', ({ method, path }) => {
    const op = operation(method, path);
    expect(op.tags?.length).toBeGreaterThan(0);
    expect(`${op.summary ?? ''}${op.description ?? ''}`.trim().length).toBeGreaterThan(0);
    expect(op.summary?.trim().length).toBeGreaterThan(0);
  });

  test('GET /api/microblog documents its query parameters limit, before and topic', () => {
    const params = operation('get', '/api/microblog').parameters ?? [];
    const query = Object.fromEntries(params.filter((p) => p.in === 'query').map((p) => [p.name, p]));
    expect(Object.keys(query).sort()).toEqual(['before', 'limit', 'topic']);
    expect(query.limit.schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 500, default: 100 });
    expect(query.topic.schema).toMatchObject({
      enum: expect.arrayContaining(['digital_footprint', 'digital_ethics']),
    });
  });

  test('GET /api/microblog documents every query parameter as optional (limit defaults to 100)', () => {
    const params = operation('get', '/api/microblog').parameters ?? [];
    for (const param of params.filter((p) => p.in === 'query'))
      expect({ name: param.name, required: param.required ?? false }).toEqual({
        name: param.name,
        required: false,
      });
  });

  test.each(API_ROUTES.filter((r) => r.method === 'post'))(
    '$method $path documents its JSON request body',
    ({ method, path }) => {
      const schema = operation(method, path).requestBody?.content?.['application/json']?.schema as
        { type?: string; properties?: Record<string, unknown> } | undefined;
      expect(schema?.type).toBe('object');
      expect(Object.keys(schema?.properties ?? {}).length).toBeGreaterThan(0);
    },
  );

  test('the request bodies name the contract fields and aliases', () => {
    const fields = (path: string) =>
      Object.keys(
        (operation('post', path).requestBody?.content?.['application/json']?.schema?.properties as object) ??
          {},
      ).sort();
    expect(fields('/api/microblog')).toEqual(['content', 'quest_topic', 'student_name']);
    expect(fields('/api/microblog/reply')).toEqual(
      ['content', 'microblogId', 'postId', 'post_id', 'student_name'].sort(),
    );
    expect(fields('/api/microblog/reaction')).toEqual(
      ['microblogId', 'postId', 'post_id', 'reactionType', 'reaction_type'].sort(),
    );
  });

  test.each(API_ROUTES)(
    '$method $path documents its success status and its error statuses as ProblemDetails',
    ({ method, path, success, errors }) => {
      const responses = operation(method, path).responses ?? {};
      expect(responses[success]).toBeDefined();
      for (const status of errors) {
        const response = responses[status];
        expect({ status, documented: response !== undefined }).toEqual({ status, documented: true });
        const schemas = Object.values(response.content ?? {}).map((c) => c.schema);
        expect({ status, schemas }).toEqual({
          status,
          schemas: expect.arrayContaining([{ $ref: '#/components/schemas/ProblemDetails' }]),
        });
        expect(response.description?.length).toBeGreaterThan(0);
      }
    },
  );

  test.each(API_ROUTES)(
    '$method $path documents its error bodies as application/problem+json (what it sends)',
    ({ method, path, errors }) => {
      const responses = operation(method, path).responses ?? {};
      for (const status of errors) {
        expect({ status, mediaTypes: Object.keys(responses[status]?.content ?? {}) }).toEqual({
          status,
          mediaTypes: ['application/problem+json'],
        });
      }
    },
  );

  test('the ProblemDetails component has the RFC 9457 members', () => {
    const problem = doc.components.schemas.ProblemDetails;
    expect(problem).toBeDefined();
    expect(Object.keys(problem.properties ?? {})).toEqual(
      expect.arrayContaining(['type', 'title', 'status', 'detail', 'errors']),
    );
  });

  test('/docs answers the interactive docs as HTML', async () => {
    const res = await fetch(url('/docs'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await res.text()).toMatch(/<html/i);
  });
});

describe('operations endpoints', () => {
  test('/healthz answers 200 with JSON', async () => {
    const res = await fetch(url('/healthz'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({ status: 'ok' });
  });

  test('/readyz answers 200 {status: "ready"} while the database answers', async () => {
    const res = await fetch(url('/readyz'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({ status: 'ready' });
  });

  test('/metrics answers Prometheus text with process metrics', async () => {
    const res = await fetch(url('/metrics'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(text).toMatch(/^# (HELP|TYPE) /m);
    expect(text).toContain('process_cpu');
  });

  test('/metrics records the duration of API requests', async () => {
    expect((await fetch(url('/api/microblog?limit=3'))).status).toBe(200);
    const text = await (await fetch(url('/metrics'))).text();
    expect(text).toMatch(/^# TYPE http_request_duration_seconds (histogram|summary)$/m);
    expect(text).toMatch(
      /^http_request_duration_seconds_count\{[^}]*method="GET"[^}]*route="\/api\/microblog"[^}]*\} [1-9]\d*$/m,
    );
  });
});

describe('request ids (x-request-id)', () => {
  test('echoes the id a caller sends', async () => {
    const res = await fetch(url('/api/microblog'), { headers: { 'x-request-id': 'panel-req-42' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('panel-req-42');
  });

  test('echoes it on error responses too', async () => {
    const res = await fetch(url('/api/nope'), { headers: { 'x-request-id': 'trace.abc-123' } });
    expect(res.status).toBe(404);
    expect(res.headers.get('x-request-id')).toBe('trace.abc-123');
  });

  test('generates a distinct id when none is sent', async () => {
    const a = (await fetch(url('/api/microblog'))).headers.get('x-request-id');
    const b = (await fetch(url('/healthz'))).headers.get('x-request-id');
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(b).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(a).not.toBe(b);
  });

  test('replaces an unsafe id (spaces, over-long) with a generated one', async () => {
    const spaced = (
      await fetch(url('/healthz'), { headers: { 'x-request-id': 'has spaces <script>' } })
    ).headers.get('x-request-id');
    expect(spaced).not.toBe('has spaces <script>');
    expect(spaced).toMatch(/^[0-9a-f-]{36}$/);
    const long = 'x'.repeat(300);
    expect(
      (await fetch(url('/healthz'), { headers: { 'x-request-id': long } })).headers.get('x-request-id'),
    ).not.toBe(long);
  });

  test('a write answers with its id as well', async () => {
    const res = await createPost(server.baseUrl, { 'x-request-id': 'write-1' });
    expect(res.status).toBe(201);
    expect(res.headers.get('x-request-id')).toBe('write-1');
  });
});

describe("the OpenAPI document's error components", () => {
  test("are this service's only: ProblemDetails and FieldError, no other service's error body", async () => {
    const t = await buildTestApp();
    try {
      const schemas = Object.keys((await t.app.inject('/docs/json')).json().components.schemas);
      expect(schemas).toEqual(expect.arrayContaining(['ProblemDetails', 'FieldError']));
      for (const other of ['KasmError', 'SocialError']) expect(schemas).not.toContain(other);
    } finally {
      await t.close();
    }
  }, 60_000);
});
