import { renderDocument, unnamedComponents, type OpenApiDocument } from '../src/document';

const withComponents = (...names: string[]): OpenApiDocument => ({
  openapi: '3.0.3',
  info: { title: 't', version: '1.0.0' },
  paths: {},
  components: { schemas: Object.fromEntries(names.map((name) => [name, { type: 'object' }])) },
});

describe('the committed document', () => {
  test('is two-space JSON with a final newline', () => {
    expect(renderDocument(withComponents('Post'))).toMatch(/^\{\n {2}"openapi": "3\.0\.3",[\s\S]*\n\}\n$/);
  });

  test('refuses components @fastify/swagger named itself (def-0): their schemas need an $id', () => {
    expect(unnamedComponents(withComponents('Post', 'def-0', 'def-12'))).toEqual(['def-0', 'def-12']);
    expect(() => renderDocument(withComponents('Post', 'def-0'))).toThrow(/def-0 .*\$id/);
  });
});
