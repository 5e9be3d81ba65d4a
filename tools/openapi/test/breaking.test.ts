import { breakingChanges, judge, majorOf } from '../src/breaking';
import type { OpenApiDocument } from '../src/document';

/** A small document: one list with a query parameter, one create with a body, a shared component. */
function document(): OpenApiDocument {
  return {
    openapi: '3.0.3',
    info: { title: 'notes', version: '1.2.0' },
    components: {
      schemas: {
        Note: {
          $id: 'Note',
          type: 'object',
          required: ['id', 'text'],
          properties: { id: { type: 'integer' }, text: { type: 'string' }, tag: { type: 'string' } },
        },
      },
    },
    paths: {
      '/notes': {
        get: {
          parameters: [
            {
              in: 'query',
              name: 'limit',
              required: false,
              schema: { type: 'integer', minimum: 1, maximum: 100 },
            },
          ],
          responses: {
            200: {
              description: 'the notes',
              content: {
                'application/json': {
                  schema: { type: 'array', items: { $ref: '#/components/schemas/Note' } },
                },
              },
            },
            400: {
              description: 'bad query',
              content: { 'application/json': { schema: { type: 'object' } } },
            },
          },
        },
        post: {
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['text'],
                  properties: {
                    text: { type: 'string', maxLength: 280 },
                    tag: { type: 'string', enum: ['a', 'b'] },
                  },
                },
              },
            },
          },
          responses: {
            201: {
              description: 'created',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/Note' } } },
            },
            400: { description: 'bad body', content: { 'application/json': { schema: { type: 'object' } } } },
          },
        },
      },
      '/notes/{id}': {
        delete: {
          parameters: [{ in: 'path', name: 'id', required: true, schema: { type: 'integer' } }],
          responses: { 204: { description: 'deleted' } },
        },
      },
    },
  };
}

type Edit = (d: any) => void;
const changed = (edit: Edit) => {
  const after = structuredClone(document());
  edit(after);
  return after;
};
const breaks = (edit: Edit) => breakingChanges(document(), changed(edit)).map((c) => c.description);

describe('breaking changes between two documents', () => {
  test('the same document breaks nothing', () => {
    expect(breakingChanges(document(), document())).toEqual([]);
  });

  test.each<[string, Edit]>([
    ['an operation removed', (d) => delete d.paths['/notes/{id}'].delete],
    ['a path removed', (d) => delete d.paths['/notes/{id}']],
    ['a response status removed', (d) => delete d.paths['/notes'].post.responses[400]],
    ['a required response field no longer required', (d) => (d.components.schemas.Note.required = ['id'])],
    ['a response field removed', (d) => delete d.components.schemas.Note.properties.text],
    [
      'a response field removed while the schema is inlined',
      (d) => {
        const { text: _text, ...properties } = d.components.schemas.Note.properties;
        d.paths['/notes'].post.responses[201].content['application/json'].schema = {
          ...d.components.schemas.Note,
          properties,
        };
      },
    ],
    [
      'a request field made required',
      (d) => d.paths['/notes'].post.requestBody.content['application/json'].schema.required.push('tag'),
    ],
    [
      'a required request field added',
      (d) => {
        const body = d.paths['/notes'].post.requestBody.content['application/json'].schema;
        body.properties.title = { type: 'string' };
        body.required.push('title');
      },
    ],
    [
      'a required parameter added',
      (d) =>
        d.paths['/notes'].get.parameters.push({
          in: 'query',
          name: 'q',
          required: true,
          schema: { type: 'string' },
        }),
    ],
    ['a parameter narrowed (maximum)', (d) => (d.paths['/notes'].get.parameters[0].schema.maximum = 50)],
    [
      'a request field narrowed (maxLength)',
      (d) =>
        (d.paths['/notes'].post.requestBody.content['application/json'].schema.properties.text.maxLength =
          140),
    ],
    [
      'a request enum narrowed',
      (d) =>
        (d.paths['/notes'].post.requestBody.content['application/json'].schema.properties.tag.enum = ['a']),
    ],
    [
      'a request field type changed',
      (d) =>
        (d.paths['/notes'].post.requestBody.content['application/json'].schema.properties.text.type =
          'integer'),
    ],
    // Our rules on top of api-smart-diff's.
    ['a response field type changed', (d) => (d.components.schemas.Note.properties.id.type = 'string')],
    ['a response field made nullable', (d) => (d.components.schemas.Note.properties.text.nullable = true)],
  ])('%s breaks', (_name, edit) => {
    expect(breaks(edit).length).toBeGreaterThan(0);
  });

  test.each<[string, Edit]>([
    [
      'an operation added',
      (d) => (d.paths['/notes/{id}'].get = { responses: { 200: { description: 'one' } } }),
    ],
    ['a response status added', (d) => (d.paths['/notes'].post.responses[409] = { description: 'taken' })],
    [
      'an optional request field added',
      (d) => {
        d.paths['/notes'].post.requestBody.content['application/json'].schema.properties.color = {
          type: 'string',
        };
      },
    ],
    [
      'an optional parameter added',
      (d) =>
        d.paths['/notes'].get.parameters.push({
          in: 'query',
          name: 'q',
          required: false,
          schema: { type: 'string' },
        }),
    ],
    ['a parameter widened (maximum)', (d) => (d.paths['/notes'].get.parameters[0].schema.maximum = 500)],
    [
      'a request field no longer required',
      (d) => (d.paths['/notes'].post.requestBody.content['application/json'].schema.required = []),
    ],
    ['a response field added', (d) => (d.components.schemas.Note.properties.color = { type: 'string' })],
    ['a description changed', (d) => (d.paths['/notes'].get.responses[200].description = 'every note')],
    ['the version changed', (d) => (d.info.version = '1.3.0')],
    [
      'an inline schema named as a component (the same fields, now a $ref)',
      (d) => {
        d.components.schemas.NewNote = d.paths['/notes'].post.requestBody.content['application/json'].schema;
        d.paths['/notes'].post.requestBody.content['application/json'].schema = {
          $ref: '#/components/schemas/NewNote',
        };
      },
    ],
    [
      'a component inlined where it was referred to',
      (d) =>
        (d.paths['/notes'].post.responses[201].content['application/json'].schema =
          d.components.schemas.Note),
    ],
  ])('%s breaks nothing', (_name, edit) => {
    expect(breaks(edit)).toEqual([]);
  });

  test("a response's inline schema named as a component (now a $ref) breaks nothing", () => {
    const inline = changed(
      (d) =>
        (d.paths['/notes'].post.responses[201].content['application/json'].schema = structuredClone(
          d.components.schemas.Note,
        )),
    );
    expect(breakingChanges(inline, document())).toEqual([]);
  });

  test('a removed operation is named in words', () => {
    expect(breaks((d) => delete d.paths['/notes/{id}'].delete)).toEqual([
      expect.stringMatching(/operation DELETE \/notes\/\{id\}/),
    ]);
  });
});

describe('the verdict', () => {
  const removed: Edit = (d) => delete d.paths['/notes/{id}'];

  test('a breaking change fails within a major version', () => {
    expect(judge(document(), changed(removed))).toMatchObject({ ok: false, majorChanged: false });
    expect(
      judge(
        document(),
        changed((d) => (removed(d), (d.info.version = '1.3.0'))),
      ),
    ).toMatchObject({ ok: false });
  });

  test('a new major version announces it: it passes, the changes still listed', () => {
    const verdict = judge(
      document(),
      changed((d) => (removed(d), (d.info.version = '2.0.0'))),
    );
    expect(verdict.ok).toBe(true);
    expect(verdict.majorChanged).toBe(true);
    expect(verdict.breaking.length).toBeGreaterThan(0);
  });

  test('a compatible change passes', () => {
    expect(
      judge(
        document(),
        changed((d) => (d.info.version = '1.3.0')),
      ),
    ).toMatchObject({ ok: true, breaking: [] });
  });

  test.each([
    ['1.0', 1],
    ['1.0.0', 1],
    ['v2.1', 2],
    ['10.0.3', 10],
    ['next', undefined],
  ])('the major of %s is %s', (version, major) => {
    expect(majorOf(version)).toBe(major);
  });
});
