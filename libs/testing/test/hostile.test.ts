/**
 * The hostile storm keeps its promises: one seed gives one storm, a request the storm sent is the run
 * fast-check replays by its path, and a failure is shrunk to the smallest request that still fails,
 * shown with the seed that replays it.
 */
import fc from 'fast-check';
import { Type } from '@sinclair/typebox';
import {
  assertStormClean,
  HostileGenerator,
  STRICT_REQUEST_RULES,
  stormDialectTestApp,
  type HostileRequest,
  type HostileRoute,
} from '../src';
import { kitDialect as dialect } from './support/dialect';

const bodyOf = (request: unknown) =>
  JSON.parse(String((request as HostileRequest).body)) as Record<string, string>;

describe('a bug planted in a route', () => {
  // Two handlers meant to refuse what their rules forbid, that crash instead (a 500): one on a
  // character (markup in a note), one on a length (a title longer than its column).
  const Note = Type.Object({ text: Type.String(), mood: Type.Optional(Type.String()) });
  const Title = Type.Object({ title: Type.String() });
  const routes: HostileRoute[] = [
    {
      method: 'POST',
      path: '/notes',
      body: { text: 'hello', mood: 'calm' },
      schemas: { body: Note },
      rules: { body: { properties: { text: { pattern: '^[^<]*$' } } } },
    },
    {
      method: 'POST',
      path: '/titles',
      body: { title: 'hello' },
      schemas: { body: Title },
      rules: { body: { properties: { title: { maxLength: 20 } } } },
    },
  ];
  const storm = (shrink?: { failures: number }) =>
    stormDialectTestApp(
      dialect,
      { routes, count: 2000, seed: 20_24, shrink },
      {
        routes: (app) => {
          app.post('/notes', { schema: { body: Note } }, async (request, reply) => {
            if ((request.body as { text: string }).text.includes('<'))
              throw new Error('markup reached the page');
            return reply.status(201).send();
          });
          app.post('/titles', { schema: { body: Title } }, async (request, reply) => {
            if ([...(request.body as { title: string }).title].length > 20)
              throw new Error('value too long for type character varying(20)');
            return reply.status(201).send();
          });
        },
      },
    );

  test('is reported as a 500, and shrunk to the smallest request that triggers it', async () => {
    const report = await storm();
    const firstOf = (path: string) => report.failures.find((f) => f.request.startsWith(`POST ${path}`))!;
    const [note, title] = [firstOf('/notes'), firstOf('/titles')];
    for (const failure of [note, title]) {
      expect(failure.problems).toEqual(['status 500, not a 4xx']);
      expect(failure.replay).toBeDefined();
    }
    if (!note.minimal?.reproduced || !title.minimal?.reproduced) throw new Error('not shrunk');

    // The markup bug: the example with the one character that triggers it, nothing else.
    const { body, ...head } = note.minimal.sent as HostileRequest;
    expect(head).toEqual({ method: 'POST', url: '/notes', headers: { 'content-type': 'application/json' } });
    expect(String(body)).toBe('{"text":"<","mood":"calm"}');
    expect(note.minimal.status).toBe(500);
    // The length bug: one character over the limit.
    expect([...bodyOf(title.minimal.sent).title]).toHaveLength(21);
    // What the storm first sent was bigger: shrinking found the smaller requests.
    expect(note.request).not.toBe(note.minimal.request);
    expect(title.request).not.toBe(title.minimal.request);

    const clean = () => assertStormClean(report);
    expect(clean).toThrow(/hostile storm with seed 2024 \(replay: HOSTILE_SEED=2024\)/);
    expect(clean).toThrow(`minimal (shrunk in ${note.minimal.shrinks} steps; fast-check seed`);
    expect(clean).toThrow(
      'POST /notes [content-type: application/json] body(26B)="{\\"text\\":\\"<\\",\\"mood\\":\\"calm\\"}"',
    );
  });

  test('shrinks only the first failures it is asked to', async () => {
    const report = await storm({ failures: 1 });
    expect(report.failures.filter((f) => f.minimal)).toHaveLength(1);
    expect(report.failures.length).toBeGreaterThan(1);
  });
});

describe('seeding', () => {
  const route: HostileRoute = {
    method: 'POST',
    path: '/things/:id',
    params: { id: '7' },
    query: { limit: '5' },
    body: { name: 'abc', count: 3 },
    schemas: {
      query: { type: 'object', properties: { limit: { type: 'integer', minimum: 1, maximum: 10 } } },
      body: {
        type: 'object',
        properties: { name: { type: 'string', maxLength: 5 }, count: { type: 'integer' } },
      },
    },
    auth: true,
  };
  const generator = (seed: number) =>
    new HostileGenerator({
      seed,
      bodyLimit: 1024,
      requestRules: STRICT_REQUEST_RULES,
      authenticate: (draft, kind, choices) => {
        if (kind !== 'none')
          draft.headers.authorization =
            kind === 'valid' ? 'Bearer good' : choices.pick(['Bearer bad', 'Basic x']);
      },
    });
  const requests = (seed: number, count: number) => {
    const g = generator(seed);
    return Array.from({ length: count }, () => g.next(route).request);
  };

  test('the same seed gives the same requests, another seed others', () => {
    expect(requests(42, 300)).toEqual(requests(42, 300));
    expect(requests(42, 300)).not.toEqual(requests(43, 300));
  });

  test("a route's n-th request is fast-check's run n of its arbitrary: the path replays it", () => {
    const g = generator(42);
    const sent = Array.from({ length: 300 }, () => g.next(route));
    const replayed = fc.sample(g.arbitrary(route), { seed: g.seedOf(route), path: '257', numRuns: 1 })[0];
    expect(sent[257].index).toBe(257);
    expect(replayed.draft).toEqual(sent[257].draft);
    expect(replayed.reasons).toEqual(sent[257].reasons);
  });
});
