import { openForTheseTests } from '@platform/testing';
import { buildTestApp, basic, type TestUser } from './support/app';
import { startTestServer, type TestServer } from './support/server';
import { USER_KEYS } from './support/wire';

/**
 * What surrounds the endpoints, over real HTTP (`fetch` against the listening service): the error
 * envelope on every error path (unknown routes, wrong methods, bodies that cannot be read, NUL
 * characters), the React client's rule that every non-204 response is JSON and every 204 is empty,
 * the redirect to the docs, the docs themselves (offline Swagger UI, the OpenAPI document at
 * /docs/json and /apispec.json, described completely), CORS with credentials (and without CORS),
 * and the operator endpoints.
 */

const ORIGIN = 'http://localhost:3000';
const JSON_TYPE = /^application\/json/;
const BEARER = 'Bearer realm="Authentication Required"';
const REASONS = { 404: 'Not Found', 405: 'Method Not Allowed' };
/** What Flask (werkzeug) says for an unknown path and for a known path with another method. */
const WERKZEUG = {
  404: 'The requested URL was not found on the server. If you entered the URL manually please check your spelling and try again.',
  405: 'The method is not allowed for the requested URL.',
};

let s: TestServer;
let alice: TestUser;
let bob: TestUser;

beforeAll(async () => {
  s = await startTestServer();
  [alice, bob] = await s.registerEach('alice', 'bob');
}, 60_000);
afterAll(() => s?.close());

interface Sent {
  status: number;
  headers: Headers;
  text: string;
}

/** A request over HTTP; `token` adds the Bearer header, `json` a JSON body. Redirects are not followed. */
async function call(
  method: string,
  path: string,
  options: { token?: string; json?: unknown; body?: string | Buffer; headers?: Record<string, string> } = {},
): Promise<Sent> {
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let body: string | Buffer | undefined = options.body;
  if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(`${s.baseUrl}${path}`, { method, headers, body, redirect: 'manual' });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** The Flask error envelope: exactly code, message and description (plus `errors` for validation), as JSON. */
function expectError(res: Sent, status: number, message: string) {
  expect({ status: res.status, type: res.headers.get('content-type') }).toEqual({
    status,
    type: expect.stringMatching(JSON_TYPE),
  });
  const body = JSON.parse(res.text);
  expect(body).toEqual({ code: status, message, description: expect.any(String) });
  expect(body.description.length).toBeGreaterThan(0);
  return body;
}

describe('the error envelope on every error path', () => {
  test.each([
    ['unknown route', 'GET', '/api/nothing', 404],
    ['unknown route', 'POST', '/api/nothing', 404],
    ['unknown route', 'GET', '/api/users/', 404], // Flask's strict slashes: no trailing slash
    ['unknown route', 'GET', '/api/posts/', 404],
    ['unknown route', 'GET', '/api', 404],
    ['unknown route', 'GET', '/nothing', 404],
    ['unknown route', 'GET', '/api/posts/1/comments', 404],
    ['known route, wrong method:', 'PATCH', '/api/me', 405],
    ['known route, wrong method:', 'DELETE', '/api/me', 405],
    ['known route, wrong method:', 'DELETE', '/api/users', 405],
    ['known route, wrong method:', 'PUT', '/api/feed', 405],
    ['known route, wrong method:', 'PATCH', '/api/posts/1', 405],
    ['known route, wrong method:', 'GET', '/api/tokens/reset', 405],
    ['known route, wrong method:', 'DELETE', '/api/me/following', 405],
  ] as const)("%s %s %s → %i JSON with werkzeug's description", async (_what, method, path, status) => {
    const body = expectError(await call(method, path, { token: alice.token }), status, REASONS[status]);
    expect(body.description).toBe(WERKZEUG[status]);
  });

  test.each([
    ['POST', '/api/posts', '{"text": "unterminated'],
    ['POST', '/api/posts', '{text: "unquoted key"}'],
    ['PUT', '/api/me', '{"about_me": "trailing comma",}'],
    ['POST', '/api/users', 'not json at all'],
    ['PUT', '/api/tokens', '{'],
  ])('malformed JSON on %s %s → 400 Bad Request without `errors`', async (method, path, body) => {
    const res = await call(method, path, {
      token: alice.token,
      body,
      headers: { 'content-type': 'application/json' },
    });
    const json = expectError(res, 400, 'Bad Request');
    expect(json).not.toHaveProperty('errors');
  });

  test.each([
    ['text/plain', 'text=hello'],
    ['application/x-www-form-urlencoded', 'text=hello'],
    ['application/xml', '<text>hello</text>'],
    [
      'multipart/form-data; boundary=x',
      '--x\r\nContent-Disposition: form-data; name="text"\r\n\r\nhello\r\n--x--\r\n',
    ],
  ])('a %s body → 415 (only JSON bodies are read), and nothing is stored', async (type, body) => {
    const before = await s.countRows('posts');
    expectError(
      await call('POST', '/api/posts', { token: alice.token, body, headers: { 'content-type': type } }),
      415,
      'Unsupported Media Type',
    );
    expect(await s.countRows('posts')).toBe(before);
  });

  test('registration with a non-JSON body → 415 too', async () => {
    expectError(
      await call('POST', '/api/users', {
        body: 'username=carol',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      }),
      415,
      'Unsupported Media Type',
    );
  });

  test('an empty body is no body, whatever its declared type (follow and unfollow → 204)', async () => {
    for (const type of ['application/json', 'text/plain;charset=UTF-8', undefined]) {
      const headers: Record<string, string> = type ? { 'content-type': type } : {};
      const followed = await call('POST', `/api/me/following/${bob.id}`, {
        token: alice.token,
        body: '',
        headers,
      });
      expect({ type, status: followed.status, text: followed.text }).toEqual({ type, status: 204, text: '' });
      const unfollowed = await call('DELETE', `/api/me/following/${bob.id}`, {
        token: alice.token,
        body: '',
        headers,
      });
      expect({ type, status: unfollowed.status, text: unfollowed.text }).toEqual({
        type,
        status: 204,
        text: '',
      });
    }
  });

  test('an oversized body → 413 JSON (the limit is 64 KiB)', async () => {
    const res = await call('POST', '/api/posts', {
      token: alice.token,
      json: { text: 'x'.repeat(70 * 1024) },
    });
    expectError(res, 413, 'Payload Too Large');
    const reg = await call('POST', '/api/users', {
      json: { username: 'huge', email: 'huge@example.com', password: 'p'.repeat(100 * 1024) },
    });
    expectError(reg, 413, 'Payload Too Large');
  });

  test('a 401 carries the Bearer challenge; a failed login the Form challenge', async () => {
    const anonymous = await call('GET', '/api/me');
    expectError(anonymous, 401, 'Unauthorized');
    expect(anonymous.headers.get('www-authenticate')).toBe(BEARER);
    const badLogin = await call('POST', '/api/tokens', {
      headers: { authorization: basic('alice', 'wrong') },
    });
    expectError(badLogin, 401, 'Unauthorized');
    expect(badLogin.headers.get('www-authenticate')).toBe('Form');
  });
});

describe('NUL characters are a 400 (or a 404/401 where the name cannot exist), never a 500', () => {
  test.each([
    ['a post text', 'POST', '/api/posts', { text: 'before\u0000after' }, 'text'],
    ['an about_me', 'PUT', '/api/me', { about_me: 'nul\u0000here' }, 'about_me'],
    [
      'a registration username',
      'POST',
      '/api/users',
      { username: 'nul\u0000name', email: 'nul@example.com', password: 'secret' },
      'username',
    ],
    [
      'a registration password',
      'POST',
      '/api/users',
      { username: 'nulpass', email: 'nulpass@example.com', password: 'sec\u0000ret' },
      'password',
    ],
    ['a reset request address', 'POST', '/api/tokens/reset', { email: 'a\u0000@example.com' }, 'email'],
    [
      'a refresh token',
      'PUT',
      '/api/tokens',
      { access_token: 'x', refresh_token: '\u0000' },
      'refresh_token',
    ],
  ])('in %s (JSON string): 400 validation error on that field', async (_name, method, path, json, field) => {
    const res = await call(method, path, { token: alice.token, json });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(JSON_TYPE);
    const body = JSON.parse(res.text);
    expect(body).toMatchObject({ code: 400, message: 'Validation Error' });
    expect(Object.keys(body.errors.json)).toEqual([field]);
    const stored = await s.storedUser(alice.id);
    expect(stored.about_me).toBeNull();
    expect(
      await s.database.db.selectFrom('posts').select('id').where('text', 'like', 'before%').execute(),
    ).toEqual([]);
    expect(
      await s.database.db.selectFrom('users').select('id').where('username', 'like', 'nul%').execute(),
    ).toEqual([]);
  });

  test('in a JSON key: 400', async () => {
    const res = await call('POST', '/api/posts', {
      token: alice.token,
      body: '{"te\\u0000xt": "hi"}',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(JSON.parse(res.text)).toMatchObject({ code: 400, message: 'Validation Error' });
  });

  test('in a username looked up by path: 404', async () => {
    expectError(await call('GET', '/api/users/ali%00ce', { token: alice.token }), 404, 'Not Found');
  });

  test('in an `after` cursor: a validation error on the query, not a database error', async () => {
    for (const path of [
      `/api/users/${alice.id}/following`,
      `/api/users/${alice.id}/followers`,
      '/api/me/following',
      '/api/me/followers',
      '/api/posts',
      '/api/feed',
    ]) {
      const res = await call('GET', `${path}?after=a%00b`, { token: alice.token });
      expect({ path, status: res.status }).toEqual({ path, status: 400 });
      expect(JSON.parse(res.text)).toMatchObject({
        code: 400,
        message: 'Validation Error',
        errors: { query: { after: [expect.any(String)] } },
      });
    }
  });

  test('in HTTP Basic credentials: 401 with the Form challenge', async () => {
    for (const [name, password] of [
      ['ali\u0000ce', 'password'],
      ['alice', 'pass\u0000word'],
      ['alice@example.com\u0000', 'password'],
    ]) {
      const res = await call('POST', '/api/tokens', { headers: { authorization: basic(name, password) } });
      expectError(res, 401, 'Unauthorized');
      expect(res.headers.get('www-authenticate')).toBe('Form');
    }
  });
});

describe('response bodies: JSON unless 204, empty when 204', () => {
  test('every non-204 response of a representative session is JSON', async () => {
    const carol = { username: 'carol', email: 'carol@example.com', password: 'secret' };
    const steps: [string, number, () => Promise<Sent>][] = [
      ['register', 201, () => call('POST', '/api/users', { json: carol })],
      ['register again', 400, () => call('POST', '/api/users', { json: carol })],
      [
        'login',
        200,
        () => call('POST', '/api/tokens', { headers: { authorization: basic('carol', 'secret') } }),
      ],
      [
        'bad login',
        401,
        () => call('POST', '/api/tokens', { headers: { authorization: basic('carol', 'nope') } }),
      ],
      [
        'refresh with a bad pair',
        401,
        () => call('PUT', '/api/tokens', { json: { access_token: 'x', refresh_token: 'y' } }),
      ],
      ['refresh without an access token', 400, () => call('PUT', '/api/tokens', { json: {} })],
      [
        'reset with a bad token',
        400,
        () => call('PUT', '/api/tokens/reset', { json: { token: 'bad', new_password: 'whatever' } }),
      ],
      ['unknown OAuth2 provider', 404, () => call('GET', '/api/tokens/oauth2/nowhere')],
      ['users', 200, () => call('GET', '/api/users', { token: alice.token })],
      ['user by id', 200, () => call('GET', `/api/users/${bob.id}`, { token: alice.token })],
      ['user by name', 200, () => call('GET', '/api/users/bob', { token: alice.token })],
      ['no such user', 404, () => call('GET', '/api/users/nobody', { token: alice.token })],
      ['me', 200, () => call('GET', '/api/me', { token: alice.token })],
      ['edit me', 200, () => call('PUT', '/api/me', { token: alice.token, json: { about_me: 'hi' } })],
      [
        'edit me badly',
        400,
        () => call('PUT', '/api/me', { token: alice.token, json: { password: 'new-password' } }),
      ],
      ['my following', 200, () => call('GET', '/api/me/following', { token: alice.token })],
      ['my followers', 200, () => call('GET', '/api/me/followers', { token: alice.token })],
      ['is following (no)', 404, () => call('GET', `/api/me/following/${bob.id}`, { token: alice.token })],
      [
        'unfollow someone not followed',
        409,
        () => call('DELETE', `/api/me/following/${bob.id}`, { token: alice.token }),
      ],
      ['follow no one', 404, () => call('POST', '/api/me/following/987654', { token: alice.token })],
      ["bob's following", 200, () => call('GET', `/api/users/${bob.id}/following`, { token: alice.token })],
      ['post', 201, () => call('POST', '/api/posts', { token: alice.token, json: { text: 'a JSON world' } })],
      ['invalid post', 400, () => call('POST', '/api/posts', { token: alice.token, json: { text: '' } })],
      ['posts', 200, () => call('GET', '/api/posts', { token: alice.token })],
      [
        'posts, offset and after',
        400,
        () => call('GET', '/api/posts?offset=0&after=2024-01-01T00:00:00Z', { token: alice.token }),
      ],
      ['posts, negative offset', 400, () => call('GET', '/api/posts?offset=-1', { token: alice.token })],
      ["alice's posts", 200, () => call('GET', `/api/users/${alice.id}/posts`, { token: alice.token })],
      ['no such post', 404, () => call('GET', '/api/posts/987654', { token: alice.token })],
      ['feed', 200, () => call('GET', '/api/feed', { token: alice.token })],
      ['anonymous feed', 401, () => call('GET', '/api/feed')],
      ['unknown route', 404, () => call('GET', '/api/nothing')],
      ['wrong method', 405, () => call('PATCH', '/api/me', { token: alice.token })],
      [
        'malformed JSON',
        400,
        () => call('POST', '/api/users', { body: '{', headers: { 'content-type': 'application/json' } }),
      ],
      [
        'text body',
        415,
        () => call('POST', '/api/users', { body: 'x', headers: { 'content-type': 'text/plain' } }),
      ],
      [
        'huge body',
        413,
        () =>
          call('POST', '/api/users', {
            body: JSON.stringify({ about_me: 'x'.repeat(70_000) }),
            headers: { 'content-type': 'application/json' },
          }),
      ],
      ['healthz', 200, () => call('GET', '/healthz')],
      ['readyz', 200, () => call('GET', '/readyz')],
      ['apispec', 200, () => call('GET', '/apispec.json')],
      ['docs json', 200, () => call('GET', '/docs/json')],
    ];
    // The post made above, edited and refused to someone else.
    steps.push(
      [
        'edit my post',
        200,
        async () => call('PUT', await lastPostUrl(), { token: alice.token, json: { text: 'edited' } }),
      ],
      [
        "edit someone else's post",
        403,
        async () => call('PUT', await lastPostUrl(), { token: bob.token, json: { text: 'mine now' } }),
      ],
    );
    for (const [name, status, send] of steps) {
      const res = await send();
      let parsed: unknown;
      try {
        parsed = JSON.parse(res.text);
      } catch {
        parsed = undefined;
      }
      expect({
        name,
        status: res.status,
        type: res.headers.get('content-type'),
        json: parsed !== undefined && parsed !== null,
      }).toEqual({
        name,
        status,
        type: expect.stringMatching(JSON_TYPE),
        json: true,
      });
    }
  });

  async function lastPostUrl() {
    const row = await s.database.db
      .selectFrom('posts')
      .select('id')
      .where('user_id', '=', alice.id)
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();
    return `/api/posts/${row.id}`;
  }

  test('every 204 has an empty body', async () => {
    const dave = await s.register({ username: 'dave' });
    const post = JSON.parse(
      (await call('POST', '/api/posts', { token: dave.token, json: { text: 'bye' } })).text,
    );
    const steps: [string, () => Promise<Sent>][] = [
      [
        'follow',
        () =>
          call('POST', `/api/me/following/${bob.id}`, {
            token: dave.token,
            headers: { 'content-type': 'application/json' },
          }),
      ],
      ['is following', () => call('GET', `/api/me/following/${bob.id}`, { token: dave.token })],
      [
        'unfollow',
        () =>
          call('DELETE', `/api/me/following/${bob.id}`, {
            token: dave.token,
            headers: { 'content-type': 'application/json' },
          }),
      ],
      [
        'reset request (known address)',
        () => call('POST', '/api/tokens/reset', { json: { email: 'dave@example.com' } }),
      ],
      [
        'reset request (unknown address)',
        () => call('POST', '/api/tokens/reset', { json: { email: 'nobody@example.com' } }),
      ],
      ['delete a post', () => call('DELETE', post.url, { token: dave.token })],
      [
        'logout',
        () =>
          call('DELETE', '/api/tokens', {
            token: dave.token,
            headers: { 'content-type': 'application/json' },
          }),
      ],
      [
        'CORS preflight',
        () =>
          call('OPTIONS', '/api/posts', {
            headers: {
              origin: ORIGIN,
              'access-control-request-method': 'POST',
              'access-control-request-headers': 'authorization,content-type',
            },
          }),
      ],
    ];
    for (const [name, send] of steps) {
      const res = await send();
      expect({
        name,
        status: res.status,
        text: res.text,
        length: res.headers.get('content-length') ?? '0',
      }).toEqual({ name, status: 204, text: '', length: '0' });
    }
  });

  test('GET / redirects (302) to /docs, the one non-JSON, non-204 answer of the API root', async () => {
    const res = await call('GET', '/');
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/docs');
  });
});

describe('the docs', () => {
  type Schema = {
    $ref?: string;
    type?: string;
    anyOf?: Schema[];
    properties?: Record<string, unknown>;
    additionalProperties?: unknown;
  };
  type Operation = {
    tags?: string[];
    summary?: string;
    security?: Record<string, string[]>[];
    requestBody?: { content?: Record<string, { schema?: Schema }> };
    responses: Record<string, { description?: string; content?: Record<string, { schema?: Schema }> }>;
  };
  type Doc = {
    openapi: string;
    info: { title: string; version: string; description?: string };
    tags: { name: string }[];
    paths: Record<string, Record<string, Operation>>;
    components: { schemas: Record<string, Schema>; securitySchemes: Record<string, Record<string, unknown>> };
    security?: unknown;
  };
  let doc: Doc;

  /** The contract's endpoints, with their tag and the security they document. */
  const OPERATIONS: [string, string, 'tokens' | 'users' | 'posts', 'basic_auth' | 'api_key' | null][] = [
    ['post', '/api/tokens', 'tokens', 'basic_auth'],
    ['put', '/api/tokens', 'tokens', null],
    ['delete', '/api/tokens', 'tokens', 'api_key'],
    ['post', '/api/tokens/reset', 'tokens', null],
    ['put', '/api/tokens/reset', 'tokens', null],
    ['get', '/api/tokens/oauth2/{provider}', 'tokens', null],
    ['post', '/api/tokens/oauth2/{provider}', 'tokens', null],
    ['post', '/api/users', 'users', null],
    ['get', '/api/users', 'users', 'api_key'],
    ['get', '/api/users/{id}', 'users', 'api_key'],
    ['get', '/api/me', 'users', 'api_key'],
    ['put', '/api/me', 'users', 'api_key'],
    ['get', '/api/me/following', 'users', 'api_key'],
    ['get', '/api/me/followers', 'users', 'api_key'],
    ['get', '/api/me/following/{id}', 'users', 'api_key'],
    ['post', '/api/me/following/{id}', 'users', 'api_key'],
    ['delete', '/api/me/following/{id}', 'users', 'api_key'],
    ['get', '/api/users/{id}/following', 'users', 'api_key'],
    ['get', '/api/users/{id}/followers', 'users', 'api_key'],
    ['post', '/api/posts', 'posts', 'api_key'],
    ['get', '/api/posts', 'posts', 'api_key'],
    ['get', '/api/posts/{id}', 'posts', 'api_key'],
    ['put', '/api/posts/{id}', 'posts', 'api_key'],
    ['delete', '/api/posts/{id}', 'posts', 'api_key'],
    ['get', '/api/users/{id}/posts', 'posts', 'api_key'],
    ['get', '/api/feed', 'posts', 'api_key'],
    // Ours, beyond the contract: the live streams (events.test.ts).
    ['get', '/api/events/posts', 'posts', 'api_key'],
    ['get', '/api/events/feed', 'posts', 'api_key'],
  ];
  const WITH_BODY = new Set([
    'put /api/tokens',
    'post /api/tokens/reset',
    'put /api/tokens/reset',
    'post /api/tokens/oauth2/{provider}',
    'post /api/users',
    'put /api/me',
    'post /api/posts',
    'put /api/posts/{id}',
  ]);

  beforeAll(async () => {
    const res = await call('GET', '/docs/json');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(JSON_TYPE);
    doc = JSON.parse(res.text);
  });

  test('/apispec.json (where the Flask backend serves it) and /docs/json serve the same OpenAPI 3 document', async () => {
    const apispec = await call('GET', '/apispec.json');
    expect(apispec.status).toBe(200);
    expect(apispec.headers.get('content-type')).toMatch(JSON_TYPE);
    expect(JSON.parse(apispec.text)).toEqual(doc);
    expect(doc.openapi).toMatch(/^3\.0\.\d+$/);
  });

  test('info: "Microblog API" 1.0, with a description; tags tokens, users, posts in that order', () => {
    expect(doc.info).toMatchObject({ title: 'Microblog API', version: '1.0' });
    expect(doc.info.description?.length).toBeGreaterThan(0);
    expect(doc.tags.map((tag) => tag.name).slice(0, 3)).toEqual(['tokens', 'users', 'posts']);
  });

  test('security schemes: basic_auth (HTTP Basic) and api_key (HTTP Bearer); no global requirement', () => {
    expect(doc.components.securitySchemes.basic_auth).toMatchObject({ type: 'http', scheme: 'basic' });
    expect(doc.components.securitySchemes.api_key).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.security).toBeUndefined();
  });

  test('named components: User, Post, Token, Pagination and the SocialError envelope', () => {
    for (const name of ['User', 'Post', 'Token', 'Pagination', 'SocialError'])
      expect({ name, defined: doc.components.schemas[name] !== undefined }).toEqual({ name, defined: true });
    expect(Object.keys(doc.components.schemas.User.properties ?? {}).sort()).toEqual(USER_KEYS);
    expect(Object.keys(doc.components.schemas.Post.properties ?? {}).sort()).toEqual([
      'author',
      'id',
      'text',
      'timestamp',
      'url',
    ]);
    expect(Object.keys(doc.components.schemas.Token.properties ?? {}).sort()).toEqual([
      'access_token',
      'refresh_token',
    ]);
    expect(Object.keys(doc.components.schemas.Pagination.properties ?? {}).sort()).toEqual([
      'count',
      'limit',
      'offset',
      'total',
    ]);
    expect(Object.keys(doc.components.schemas.SocialError.properties ?? {})).toEqual(
      expect.arrayContaining(['code', 'message', 'description', 'errors']),
    );
  });

  test('the /api operations are exactly the contract endpoints and the live streams', () => {
    const documented = Object.entries(doc.paths)
      .filter(([path]) => path.startsWith('/api/'))
      .flatMap(([path, ops]) => Object.keys(ops).map((method) => `${method} ${path}`))
      .sort();
    expect(documented).toEqual(OPERATIONS.map(([method, path]) => `${method} ${path}`).sort());
  });

  test.each(OPERATIONS)(
    '%s %s: tag, summary, security, success and error responses',
    (method, path, tag, security) => {
      const op = doc.paths[path][method];
      expect(op.tags).toEqual([tag]);
      expect(op.summary?.trim().length).toBeGreaterThan(0);
      if (security) expect(op.security).toEqual([{ [security]: [] }]);
      else expect(op.security ?? []).toEqual([]);

      const statuses = Object.keys(op.responses);
      const successes = statuses.filter((s) => /^[23]\d\d$/.test(s));
      expect(successes).toHaveLength(1);
      const [success] = successes;
      expect(op.responses[success].description?.length).toBeGreaterThan(0);
      if (success === '200' || success === '201') {
        const type = path.startsWith('/api/events/') ? 'text/event-stream' : 'application/json';
        expect(Object.keys(op.responses[success].content ?? {})).toEqual([type]);
        const schema = op.responses[success].content?.[type]?.schema;
        // A stream's: one message schema per event (`anyOf`).
        expect(schema?.$ref ?? schema?.type ?? schema?.anyOf).toBeDefined();
        if (!schema?.$ref && !schema?.anyOf)
          expect(Object.keys(schema?.properties ?? {}).length).toBeGreaterThan(0);
      } else {
        // 204 and 302 carry no body, and the document says so (no content).
        expect(op.responses[success].content).toBeUndefined();
      }

      const failures = statuses.filter((s) => /^[45]\d\d$/.test(s));
      expect(failures).toEqual(expect.arrayContaining(['500', '503']));
      if (security === 'api_key' || security === 'basic_auth') expect(failures).toContain('401');
      if (WITH_BODY.has(`${method} ${path}`))
        expect(failures).toEqual(expect.arrayContaining(['400', '413', '415']));
      for (const status of failures) {
        const response = op.responses[status];
        expect({ status, description: (response.description?.length ?? 0) > 0 }).toEqual({
          status,
          description: true,
        });
        expect({ status, content: response.content }).toEqual({
          status,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/SocialError' } } },
        });
      }
    },
  );

  test.each([...WITH_BODY])('%s documents its JSON request body', (operation) => {
    const [method, path] = operation.split(' ');
    const schema = doc.paths[path][method].requestBody?.content?.['application/json']?.schema;
    expect(schema?.type).toBe('object');
    expect(Object.keys(schema?.properties ?? {}).length).toBeGreaterThan(0);
    expect(schema?.additionalProperties).toBe(false);
  });

  test('the request bodies name the fields the client sends', () => {
    const fields = (method: string, path: string) =>
      Object.keys(
        doc.paths[path][method].requestBody?.content?.['application/json']?.schema?.properties ?? {},
      ).sort();
    expect(fields('post', '/api/users')).toEqual(['about_me', 'email', 'password', 'username']);
    expect(fields('put', '/api/me')).toEqual(['about_me', 'email', 'old_password', 'password', 'username']);
    expect(fields('post', '/api/posts')).toEqual(['text']);
    expect(fields('put', '/api/posts/{id}')).toEqual(['text']);
    expect(fields('put', '/api/tokens')).toEqual(['access_token', 'refresh_token']);
  });

  test('/docs is Swagger UI served offline: every asset from the service, no CDN', async () => {
    const res = await fetch(`${s.baseUrl}/docs`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await res.text();
    expect(html).toMatch(/swagger-ui/i);
    expect(html).not.toMatch(/unpkg|jsdelivr|cdnjs|cdn\./i);
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(assets.length).toBeGreaterThan(2);
    for (const asset of assets) {
      expect(asset).not.toMatch(/^(https?:)?\/\//);
      const fetched = await fetch(new URL(asset, res.url));
      expect({ asset, status: fetched.status }).toEqual({ asset, status: 200 });
      await fetched.arrayBuffer();
    }
    const init = await (await fetch(new URL('/docs/static/swagger-initializer.js', s.baseUrl))).text();
    expect(init).toContain("resolveUrl('./json')"); // the document of this service
    expect(init).toMatch(/validatorUrl:\s*null/); // no call to the public validator either
  });
});

describe('CORS', () => {
  test('a request with an Origin gets it echoed back, with credentials (the refresh cookie)', async () => {
    const res = await call('GET', '/api/me', { token: alice.token, headers: { origin: ORIGIN } });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    expect(res.headers.get('access-control-allow-credentials')).toBe('true');
    expect(res.headers.get('vary')).toMatch(/origin/i);
  });

  test('any origin is echoed, on errors too (so the client can read them)', async () => {
    const other = 'https://elsewhere.example';
    const res = await call('GET', '/api/me', { headers: { origin: other } });
    expect(res.status).toBe(401);
    expect(res.headers.get('access-control-allow-origin')).toBe(other);
    expect(res.headers.get('access-control-allow-credentials')).toBe('true');
  });

  test('a preflight needs no token and allows the Authorization header and every method the client uses', async () => {
    const res = await call('OPTIONS', '/api/me', {
      headers: {
        origin: ORIGIN,
        'access-control-request-method': 'PUT',
        'access-control-request-headers': 'authorization,content-type',
      },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    expect(res.headers.get('access-control-allow-credentials')).toBe('true');
    const methods = (res.headers.get('access-control-allow-methods') ?? '').split(',').map((m) => m.trim());
    expect(methods).toEqual(expect.arrayContaining(['GET', 'POST', 'PUT', 'DELETE']));
    expect((res.headers.get('access-control-allow-headers') ?? '').toLowerCase()).toMatch(/authorization/);
  });

  test('the login answers a cross-origin call with the refresh cookie allowed through', async () => {
    const res = await call('POST', '/api/tokens', {
      headers: { origin: ORIGIN, authorization: basic('alice', 'password') },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    expect(res.headers.get('access-control-allow-credentials')).toBe('true');
    expect(res.headers.get('set-cookie')).toMatch(/^refresh_token=/);
  });

  describe('with USE_CORS=no', () => {
    const withoutCors = openForTheseTests(() => buildTestApp({ USE_CORS: 'no' }), 60_000);

    test('no CORS header on any answer, preflights included', async () => {
      const plain = withoutCors();
      const user = await plain.register();
      const requests = [
        plain.as(user.token, { method: 'GET', url: '/api/me', headers: { origin: ORIGIN } }),
        plain.as(null, { method: 'GET', url: '/api/me', headers: { origin: ORIGIN } }),
        plain.as(null, {
          method: 'OPTIONS',
          url: '/api/me',
          headers: {
            origin: ORIGIN,
            'access-control-request-method': 'GET',
            'access-control-request-headers': 'authorization',
          },
        }),
      ];
      const responses = await Promise.all(requests);
      expect(responses[0].statusCode).toBe(200);
      expect(responses[1].statusCode).toBe(401);
      for (const res of responses) {
        expect(Object.keys(res.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
        if (res.statusCode !== 204) expect(res.headers['content-type']).toMatch(JSON_TYPE);
      }
    });
  });
});

describe('operator endpoints', () => {
  test('/healthz answers 200 {status: "ok"}', async () => {
    const res = await call('GET', '/healthz');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(JSON_TYPE);
    expect(JSON.parse(res.text)).toEqual({ status: 'ok' });
  });

  test('/readyz answers 200 {status: "ready"} while the database answers', async () => {
    const res = await call('GET', '/readyz');
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text)).toEqual({ status: 'ready' });
  });
});

describe("the OpenAPI document's error components", () => {
  test("are this service's only: SocialError, no other service's error body", async () => {
    const t = await buildTestApp();
    try {
      const schemas = Object.keys((await t.app.inject('/docs/json')).json().components.schemas);
      expect(schemas).toContain('SocialError');
      for (const other of ['ProblemDetails', 'FieldError', 'KasmError']) expect(schemas).not.toContain(other);
    } finally {
      await t.close();
    }
  }, 60_000);
});
