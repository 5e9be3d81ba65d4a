import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import swagger, { type FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';

type OpenApiDocument = NonNullable<FastifyDynamicSwaggerOptions['openapi']>;

export interface DocsOptions {
  title: string;
  description: string;
  version: string;
  tags: { name: string; description: string }[];
  /** Extra OpenAPI pieces, e.g. `components.securitySchemes`. */
  openapi?: Partial<OpenApiDocument>;
}

/**
 * JSON Schema's `examples` (an array) as OpenAPI 3.0's `example` (one value), everywhere in `node`:
 * @fastify/swagger converts it in object and array schemas only, and leaves it under `anyOf` (the
 * event streams' messages), which strict validators of 3.0 refuse. Media types' and parameters'
 * `examples` are maps, never arrays, and stay.
 */
function downgradeExamples(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) downgradeExamples(item);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  const object = node as Record<string, unknown>;
  if (Array.isArray(object.examples)) {
    object.example ??= object.examples[0];
    delete object.examples;
  }
  for (const value of Object.values(object)) downgradeExamples(value);
}

/**
 * The OpenAPI document of every route registered after it (at /docs/json), with the operators' `ops`
 * tag, and Swagger UI served offline at /docs.
 */
export const swaggerPlugin = fp(
  async function swaggerPlugin(app: FastifyInstance, options: DocsOptions) {
    await app.register(swagger, {
      openapi: {
        openapi: '3.0.3',
        ...options.openapi,
        info: { title: options.title, description: options.description, version: options.version },
        tags: [...options.tags, { name: 'ops', description: 'Health, readiness and metrics for operators' }],
      },
      // Components keep the schemas' `$id`s as names instead of `def-0`, `def-1`...
      refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
      transformObject: (document) => {
        const openapi = 'openapiObject' in document ? document.openapiObject : document.swaggerObject;
        downgradeExamples(openapi);
        return openapi;
      },
    });
    await app.register(swaggerUi, {
      routePrefix: '/docs',
      staticCSP: true,
      // Swagger UI sets inline styles at run time; its own CSP would block them.
      // No upgrade-insecure-requests: over plain HTTP on another host than localhost (a LAN address, a
      // compose host) the browser would fetch the docs' assets over https and the page would break.
      transformStaticCSP: (header) =>
        header
          .replace(/style-src 'self' https:/, "style-src 'self' https: 'unsafe-inline'")
          .replace(/\s*upgrade-insecure-requests;?/, ''),
      uiConfig: { docExpansion: 'list', deepLinking: true },
    });
  },
  { name: '@platform/swagger', fastify: '5.x' },
);
