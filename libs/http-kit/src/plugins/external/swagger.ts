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
