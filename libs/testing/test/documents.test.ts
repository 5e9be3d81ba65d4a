/**
 * The responses' proof: every answer of an app with an OpenAPI document is checked against it, and
 * what the document does not describe (an undocumented status, a body against its schema, a field
 * the schema does not name, another content type, a wrong documented header, a body where none is
 * documented, an answer before routing outside the dialect) is a violation naming the response; a
 * Jest file wired with the kit's setup fails the very test that received it.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import {
  dialectTestApp,
  DocumentValidator,
  openEventStream,
  openForTheseTests,
  parseRawResponse,
  proveResponses,
  rawExchange,
  type ObservedResponse,
} from '../src';
import { plantedRoutes } from './fixtures/proven/planted';
import { kitDialect as dialect } from './support/dialect';

const proof = proveResponses();
afterAll(() => proof.stop());
/** The violations since the last call, as `response: problems`. */
const taken = () => proof.violations.splice(0).map((v) => `${v.response}: ${v.problems.join(' | ')}`);

describe('an app with planted answers, each response proven as it leaves', () => {
  const app = openForTheseTests(() => dialectTestApp(dialect, { routes: plantedRoutes(dialect) }));

  test('documented answers pass: success, documented errors, HEAD, 204, an unknown path, a 405', async () => {
    taken();
    const before = { ...proof.counts };
    for (const request of [
      { url: '/count' },
      { url: '/count?answer=missing' },
      { url: '/count', method: 'HEAD' as const },
      { url: '/count', method: 'DELETE' as const },
      { url: '/later?after=5' },
      { url: '/nowhere' },
      { url: '/count', method: 'PUT' as const },
      { url: '/things?limit=3' },
      { url: '/docs/json' },
    ])
      await app().inject(request);
    expect(taken()).toEqual([]);
    expect(proof.counts.routed - before.routed).toBe(6);
    expect(proof.counts.unrouted - before.unrouted).toBe(2);
    expect(proof.counts.hidden - before.hidden).toBe(1);
  });

  test.each([
    ['wrong-type', /GET \/count\?answer=wrong-type → 200: body: \/count must be integer/],
    ['extra-field', /→ 200: body: \(root\) must NOT have additional properties "secret"/],
    ['teapot', /→ 418: status 418 is not documented for GET \/count \(documented: 200, 404, 500, 503\)/],
    ['text', /→ 200: content type "text\/plain" where GET \/count 200 documents application\/json/],
    ['not-json', /→ 200: the body is not JSON: "\{count: 1\}"/],
    ['error-outside-dialect', /→ 404: body: \(root\) must have required property 'status'/],
  ])('a response %s is a violation naming method, URL, status and problem', async (answer, expected) => {
    await app().inject({ url: `/count?answer=${answer}` });
    const violations = taken();
    expect(violations).toHaveLength(1);
    expect(violations[0]).toMatch(expected);
  });

  test('documented headers are checked where they are sent', async () => {
    await app().inject({ url: '/later?after=soon' });
    expect(taken()).toEqual([
      expect.stringMatching(/GET \/later\?after=soon → 503: header Retry-After: must be integer/),
    ]);
  });

  test('a response taken over (an event stream): its status and content type', async () => {
    await app().inject({ url: '/stream' });
    expect(taken()).toEqual([]);
    await app().inject({ url: '/stream?type=text/plain' });
    expect(taken()).toEqual([
      expect.stringMatching(
        /GET \/stream\?type=text\/plain → 200: content type "text\/plain" where GET \/stream 200 documents text\/event-stream/,
      ),
    ]);
  });

  test('a body where the document describes none', async () => {
    await app().inject({ url: '/moved' });
    expect(taken()).toEqual([
      expect.stringMatching(/GET \/moved → 302: a body \(text\/plain\) where GET \/moved 302 documents none/),
    ]);
  });

  test('over real HTTP too, and for the answers written on the socket before any route', async () => {
    await app().listen({ port: 0, host: '127.0.0.1' });
    const { port } = app().server.address() as { port: number };
    const response = await fetch(`http://127.0.0.1:${port}/count?answer=extra-field`);
    expect(await response.json()).toEqual({ count: 1, secret: 's3cr3t' });
    // Malformed HTTP: http-kit answers it on the socket, in the dialect (documented).
    const raw = parseRawResponse(
      await rawExchange(port, 'GET /count HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n').closed,
    );
    expect(raw.status).toBe(400);
    expect(taken()).toEqual([
      expect.stringMatching(/GET \/count\?answer=extra-field → 200: body: .*"secret"/),
    ]);
    expect(proof.counts.unrouted).toBeGreaterThanOrEqual(3);
  });
});

describe('the messages of an event stream, as the kit’s openEventStream reads them', () => {
  const app = openForTheseTests(async () => {
    const built = await dialectTestApp(dialect, { routes: plantedRoutes(dialect) });
    await built.listen({ port: 0, host: '127.0.0.1' });
    return built;
  });
  const url = (query = '') =>
    `http://127.0.0.1:${(app().server.address() as { port: number }).port}/ticks${query}`;

  test('each message is checked against its event’s documented schema', async () => {
    taken();
    const before = proof.counts.messages;
    const good = await openEventStream(url());
    await good.ended;
    expect(good.messages).toHaveLength(1);
    expect(taken()).toEqual([]);
    const wrong = await openEventStream(url('?wrong=1'));
    await wrong.ended;
    expect(taken()).toEqual([
      expect.stringMatching(
        /GET http:.*\/ticks\?wrong=1 \(a message of its stream\): event tick: \/data\/n must be integer/,
      ),
      expect.stringMatching(/\(a message of its stream\): event tock is not one the stream documents/),
    ]);
    expect(proof.counts.messages - before).toBe(4);
  });
});

describe('DocumentValidator', () => {
  let app: FastifyInstance;
  let validator: DocumentValidator;
  beforeAll(async () => {
    app = await dialectTestApp(dialect, { routes: plantedRoutes(dialect) });
    validator = new DocumentValidator(app.swagger() as never, {
      error: { schema: 'KitError', mediaType: 'application/vnd.kit-error+json' },
    });
  });
  afterAll(() => app.close());

  const json = 'application/json; charset=utf-8';
  const seen = (over: Partial<ObservedResponse>): ObservedResponse => ({
    method: 'GET',
    url: '/count',
    route: '/count',
    status: 200,
    headers: { 'content-type': json },
    body: '{"count":1}',
    ...over,
  });
  const kitError = (status: number) => JSON.stringify(dialect.body({ status, detail: 'd' }));

  test('a documented response has no problem; HEAD and a stream are checked without their body', () => {
    expect(validator.problems(seen({}))).toEqual([]);
    expect(validator.problems(seen({ method: 'HEAD', body: '' }))).toEqual([]);
    expect(validator.problems(seen({ body: undefined }))).toEqual([]);
  });

  test('an operation the document does not have', () => {
    expect(validator.problems(seen({ route: '/secret' }))).toEqual([
      'GET /secret is not an operation of the document',
    ]);
  });

  test('Fastify route parameters are found under their OpenAPI name', () => {
    expect(validator.problems(seen({ route: '/things/:id', url: '/things/7', body: '{"id":"7"}' }))).toEqual(
      [],
    );
  });

  test('an answer before routing: a status the platform answers there, in the dialect, a 405 with Allow', () => {
    const unrouted = (status: number, body: string, headers = {}) =>
      validator.problems(
        seen({
          route: undefined,
          status,
          body,
          headers: { 'content-type': dialect.contentType, ...headers },
        }),
      );
    expect(unrouted(404, kitError(404))).toEqual([]);
    expect(unrouted(405, kitError(405), { allow: 'GET' })).toEqual([]);
    expect(unrouted(405, kitError(405))).toEqual(['a 405 without Allow']);
    expect(unrouted(200, '{}')[0]).toMatch(/^status 200 answered without a route/);
    expect(unrouted(404, '{"message":"no"}')[0]).toMatch(/^body: .*required property/);
  });
});

describe('the Jest setup of the services’ suites', () => {
  test('fails the test that received an undocumented response, and only that test', async () => {
    const jest = require.resolve('jest/bin/jest');
    const config = join(__dirname, 'fixtures', 'proven', 'jest.config.cjs');
    const run = await promisify(execFile)(process.execPath, [jest, '--config', config, '--json'], {
      // Its responses are its own (not counted in this run's log).
      env: { ...process.env, NODE_OPTIONS: '', PROVEN_RESPONSES_LOG: '' },
      maxBuffer: 16 * 1024 * 1024,
    }).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }));
    const report = JSON.parse(run.stdout) as {
      testResults: { assertionResults: { title: string; status: string; failureMessages: string[] }[] }[];
    };
    const results = report.testResults.flatMap((file) => file.assertionResults);
    const byTitle = Object.fromEntries(results.map((r) => [r.title, r]));
    expect(Object.fromEntries(results.map((r) => [r.title, r.status]))).toEqual({
      'documented answers': 'passed',
      'a body against its schema, injected': 'failed',
      'a field the schema does not name, over real HTTP': 'failed',
      'after them, documented answers again': 'passed',
      "a child process's documented answer": 'passed',
      "a child process's field the schema does not name": 'failed',
    });
    expect(byTitle['a body against its schema, injected'].failureMessages.join('\n')).toMatch(
      /1 response\(s\) the service's OpenAPI document does not describe:\n- GET \/count\?answer=wrong-type → 200\n {4}body: \/count must be integer/,
    );
    expect(byTitle['a field the schema does not name, over real HTTP'].failureMessages.join('\n')).toMatch(
      /GET \/count\?answer=extra-field → 200\n {4}body: \(root\) must NOT have additional properties "secret"/,
    );
    expect(byTitle["a child process's field the schema does not name"].failureMessages.join('\n')).toMatch(
      /GET \/count\?answer=extra-field → 200 \(a child process\)\n {4}body: \(root\) must NOT have additional properties "secret"/,
    );
  }, 120_000);
});
