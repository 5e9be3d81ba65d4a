/** The storm's routes from a service's OpenAPI document, so a new route cannot escape the storm. */
import type { HostileRoute, JsonSchema } from './routes';

/** What a test gives for one documented route: its valid example and what the handler adds. */
export type RouteExample = Omit<HostileRoute, 'method' | 'path' | 'schemas' | 'otherMethods'>;

interface OpenApiOperation {
  parameters?: { in: string; name: string; required?: boolean; schema?: JsonSchema }[];
  requestBody?: { content?: Record<string, { schema?: JsonSchema }> };
}

/**
 * The storm's routes from the service's OpenAPI document (`app.swagger()`), with the test's example
 * for each (keyed `"METHOD /path/{param}"`). A documented route without an example, or an example
 * for a route that is not documented, is an error: a new route cannot escape the storm.
 */
export function hostileRoutesFromOpenApi(
  document: {
    paths: Record<string, Record<string, OpenApiOperation>>;
    components?: { schemas?: Record<string, JsonSchema> };
  },
  examples: Record<string, RouteExample>,
): HostileRoute[] {
  const components = document.components?.schemas ?? {};
  const deref = (node: unknown, seen: string[] = []): unknown => {
    if (Array.isArray(node)) return node.map((n) => deref(n, seen));
    if (!node || typeof node !== 'object') return node;
    const ref = (node as { $ref?: string }).$ref;
    if (typeof ref === 'string' && ref.startsWith('#/components/schemas/')) {
      const name = ref.slice('#/components/schemas/'.length);
      if (seen.includes(name)) return {};
      return deref(components[name], [...seen, name]);
    }
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, deref(v, seen)]));
  };
  const routes: HostileRoute[] = [];
  const documented = new Set<string>();
  const methods = ['get', 'post', 'put', 'patch', 'delete'];
  for (const [openApiPath, operations] of Object.entries(document.paths)) {
    const path = openApiPath.replace(/\{([^}]+)\}/g, ':$1');
    const here = Object.keys(operations).filter((m) => methods.includes(m));
    for (const method of here) {
      const key = `${method.toUpperCase()} ${openApiPath}`;
      documented.add(key);
      const example = examples[key];
      if (!example) throw new Error(`no hostile-storm example for the documented route ${key}`);
      const operation = operations[method];
      const partSchema = (where: string): JsonSchema | undefined => {
        const parameters = (operation.parameters ?? []).filter((p) => p.in === where);
        if (!parameters.length) return undefined;
        return deref({
          type: 'object',
          properties: Object.fromEntries(parameters.map((p) => [p.name, p.schema ?? {}])),
          required: parameters.filter((p) => p.required).map((p) => p.name),
        }) as JsonSchema;
      };
      const body = operation.requestBody?.content?.['application/json']?.schema;
      routes.push({
        ...example,
        method: method.toUpperCase(),
        path,
        otherMethods: here.filter((m) => m !== method).map((m) => m.toUpperCase()),
        schemas: {
          body: body ? (deref(body) as JsonSchema) : undefined,
          query: partSchema('query'),
          params: partSchema('path'),
        },
      });
    }
  }
  const extra = Object.keys(examples).filter((k) => !documented.has(k));
  if (extra.length) throw new Error(`hostile-storm examples for undocumented routes: ${extra.join(', ')}`);
  return routes;
}
