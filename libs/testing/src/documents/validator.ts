/**
 * Whether a response is one the service's OpenAPI document describes: its status documented for the
 * operation that answered, its content type one the document lists for that status, its body valid
 * against that media type's schema, and the headers the document lists valid where they are sent.
 *
 * The document's schemas are JSON Schema (TypeBox's, as `@fastify/swagger` writes them into OpenAPI
 * 3.0.3), so they are checked by Ajv 8, the engine Fastify checks requests with. What OpenAPI 3.0
 * adds is handled: `nullable` (Ajv's own keyword), `example` and `x-` annotations (ignored),
 * `$ref: '#/components/schemas/...'` (the document is one Ajv schema; each response schema is
 * compiled by its JSON pointer inside it, so its references resolve in place).
 */
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { FormatRegistry } from '@sinclair/typebox';

/** A response as it left the service. */
export interface ObservedResponse {
  method: string;
  /** The request's path and query string. */
  url: string;
  /**
   * The route that answered, as Fastify names it (`/api/users/:id`); undefined when no route did:
   * an unknown path (404), a method the path does not take (405), a URL or HTTP message refused
   * before routing.
   */
  route?: string;
  status: number;
  /** Lower-case header names. */
  headers: Record<string, string | string[] | number | undefined>;
  /** The body as sent; undefined when it was a stream (an event stream, a file). */
  body?: string | Buffer;
}

/** The parts of an OpenAPI 3.0 document read here. */
export interface OpenApiDocument {
  paths: Record<string, Record<string, unknown>>;
  components?: { schemas?: Record<string, unknown> };
}

interface MediaType {
  schema?: unknown;
}
interface Header {
  schema?: unknown;
  required?: boolean;
}
interface Response {
  content?: Record<string, MediaType>;
  headers?: Record<string, Header>;
}
interface Operation {
  responses?: Record<string, Response>;
}

export interface DocumentValidatorOptions {
  /**
   * The error body every answer made before routing has (the service's error dialect): its component
   * name in `#/components/schemas` and the media type it is sent as.
   */
  error: { schema: string; mediaType: string };
  /** The statuses an answer made before routing may have (default `UNROUTED_STATUSES`). */
  unroutedStatuses?: readonly number[];
}

/**
 * What the platform answers when no route does, each in the service's error dialect: a URL it
 * cannot decode or an HTTP message Node refuses (400), an unknown path (404), a method the path or
 * the service does not take (405, with `Allow`), a request not received in time (408), an over-long
 * path parameter (414), oversized headers (431).
 */
export const UNROUTED_STATUSES: readonly number[] = [400, 404, 405, 408, 414, 431];

const JSON_MEDIA = /^application\/(?:[\w.+-]+\+)?json$/;
const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace']);

/** `~` and `/` escaped for a JSON pointer segment. */
const pointer = (segments: string[]) =>
  segments.map((s) => s.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

/** `/api/users/:id` as OpenAPI writes it: `/api/users/{id}`. */
export const openApiPath = (route: string) => route.replace(/:(\w+)(?:\([^)]*\))?/g, '{$1}');

const mediaTypeOf = (headers: ObservedResponse['headers']) => {
  const value = headers['content-type'];
  const text = Array.isArray(value) ? value[0] : value === undefined ? '' : String(value);
  return text.split(';')[0].trim().toLowerCase();
};

/**
 * A copy of the document whose response objects are closed: an object schema that names its
 * properties and says nothing of others gets `additionalProperties: false`. Fastify's serializer
 * drops a field its response schema does not name, so a field that reaches a client was sent around
 * the schema: a response the document does not describe. The members of an `allOf` stay open (each
 * names only its share of the properties).
 */
function closedResponses(document: OpenApiDocument): OpenApiDocument {
  const copy = structuredClone(document);
  const close = (node: unknown, closable = true): void => {
    if (Array.isArray(node)) return node.forEach((item) => close(item, closable));
    if (!node || typeof node !== 'object') return;
    const schema = node as Record<string, unknown>;
    if (
      closable &&
      schema.properties &&
      typeof schema.properties === 'object' &&
      !('additionalProperties' in schema) &&
      !('patternProperties' in schema)
    )
      schema.additionalProperties = false;
    for (const [key, value] of Object.entries(schema)) {
      // `properties` maps names to schemas: its keys are not keywords.
      if (key === 'properties' && value && typeof value === 'object')
        for (const property of Object.values(value)) close(property);
      else if (key === 'allOf') close(value, false);
      else if (key !== 'example' && key !== 'default' && key !== 'enum' && key !== 'const') close(value);
    }
  };
  for (const schema of Object.values(copy.components?.schemas ?? {})) close(schema);
  for (const item of Object.values(copy.paths))
    for (const [method, operation] of Object.entries(item)) {
      if (!METHODS.has(method)) continue;
      for (const response of Object.values((operation as Operation).responses ?? {}))
        for (const content of Object.values(response.content ?? {})) close(content.schema);
    }
  return copy;
}

/** Every `format` the document's schemas name. */
function formatsOf(node: unknown, found = new Set<string>()): Set<string> {
  if (Array.isArray(node)) node.forEach((item) => formatsOf(item, found));
  else if (node && typeof node === 'object')
    for (const [key, value] of Object.entries(node)) {
      if (key === 'format' && typeof value === 'string') found.add(value);
      else formatsOf(value, found);
    }
  return found;
}

const describeErrors = (errors: ErrorObject[] | null | undefined, limit = 5) =>
  (errors ?? [])
    .slice(0, limit)
    .map((e) => {
      const where = e.instancePath || '(root)';
      const extra =
        e.keyword === 'additionalProperties'
          ? ` "${String(e.params.additionalProperty)}"`
          : e.keyword === 'enum'
            ? ` (${(e.params.allowedValues as unknown[]).join(', ')})`
            : '';
      return `${where} ${e.message}${extra}`;
    })
    .join('; ') + ((errors?.length ?? 0) > limit ? `; and ${errors!.length - limit} more` : '');

/**
 * Checks responses against one OpenAPI document; schemas are compiled on first use and kept, so
 * one validator serves every app a test file builds with the same document.
 */
export class DocumentValidator {
  private readonly ajv: Ajv;
  private readonly headerAjv: Ajv;
  private readonly compiled = new Map<string, ValidateFunction>();
  private readonly document: OpenApiDocument;
  private readonly unrouted: Set<number>;
  private readonly errorResponse: Response;
  /** Each document path as a pattern, literal paths first (`/api/me/following` before `/api/me/{id}`). */
  private readonly templates: { path: string; pattern: RegExp }[];

  constructor(
    document: OpenApiDocument,
    private readonly options: DocumentValidatorOptions,
  ) {
    this.document = closedResponses(document);
    const errorSchema = this.document.components?.schemas?.[options.error.schema];
    if (!errorSchema) throw new Error(`the document has no error component "${options.error.schema}"`);
    this.errorResponse = {
      content: {
        [options.error.mediaType]: { schema: { $ref: `#/components/schemas/${options.error.schema}` } },
      },
    };
    this.unrouted = new Set(options.unroutedStatuses ?? UNROUTED_STATUSES);
    // The document carries OpenAPI's keywords beside JSON Schema's (`example`, `x-...`, `discriminator`):
    // not strict. Nothing is coerced, removed or defaulted: the body is judged as sent.
    const base = { strict: false, allErrors: true, validateFormats: true } as const;
    this.ajv = new Ajv(base);
    this.headerAjv = new Ajv({ ...base, coerceTypes: true });
    for (const ajv of [this.ajv, this.headerAjv]) {
      addFormats(ajv);
      // Formats of the service's own (TypeBox's registry: where the service declared them).
      for (const format of formatsOf(document)) {
        if (ajv.formats[format]) continue;
        if (!FormatRegistry.Has(format))
          throw new Error(`the document uses the format "${format}", which neither Ajv nor TypeBox knows`);
        const check = FormatRegistry.Get(format)!;
        ajv.addFormat(format, { validate: (value: string) => check(value) });
      }
    }
    this.ajv.addSchema(this.document as object, 'openapi.json');
    this.templates = Object.keys(this.document.paths)
      .map((path) => ({
        path,
        pattern: new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
      }))
      .sort((a, b) => Number(a.path.includes('{')) - Number(b.path.includes('{')));
  }

  /**
   * What is wrong with one message of an event stream (`GET pathname`, its documented 200
   * `text/event-stream`): the document describes each message as `{id, event, data}`, one `anyOf`
   * branch an event name, `data` the JSON of the `data:` line.
   */
  messageProblems(pathname: string, message: { id?: string; event?: string; data: string }): string[] {
    const path = this.templates.find((t) => t.pattern.test(pathname))?.path;
    const operation = path ? (this.document.paths[path].get as Operation | undefined) : undefined;
    const schema = operation?.responses?.['200']?.content?.['text/event-stream']?.schema as
      { anyOf?: { properties?: { event?: { enum?: unknown[]; const?: unknown } } }[] } | undefined;
    if (!path || !schema) return [`GET ${pathname} documents no event stream`];
    const event = message.event ?? 'message';
    let data: unknown;
    try {
      data = JSON.parse(message.data);
    } catch {
      return [`event ${event}: its data is not JSON: ${JSON.stringify(message.data.slice(0, 120))}`];
    }
    const id =
      message.id === undefined ? {} : { id: /^\d+$/.test(message.id) ? Number(message.id) : message.id };
    const at = ['paths', path, 'get', 'responses', '200', 'content', 'text/event-stream', 'schema'];
    // The branch of this event (its `event` enum), so a failure names its fields, not every branch's.
    if (schema.anyOf) {
      const branch = schema.anyOf.findIndex((b) => {
        const name = b.properties?.event;
        return name?.const === event || (name?.enum ?? []).includes(event);
      });
      if (branch < 0) return [`event ${event} is not one the stream documents`];
      at.push('anyOf', String(branch));
    }
    const validate = this.compile(at, () => this.ajv.compile({ $ref: `openapi.json#/${pointer(at)}` }));
    return validate({ ...id, event, data }) ? [] : [`event ${event}: ${describeErrors(validate.errors)}`];
  }

  /** What is wrong with `response`: nothing when the document describes it. */
  problems(response: ObservedResponse): string[] {
    if (response.route === undefined) return this.unroutedProblems(response);
    const path = openApiPath(response.route);
    // HEAD is GET without the body (RFC 9110, 9.3.2): Fastify answers it with the GET route.
    const method = response.method === 'HEAD' ? 'get' : response.method.toLowerCase();
    const operation = this.document.paths[path]?.[method] as Operation | undefined;
    if (!operation) return [`${method.toUpperCase()} ${path} is not an operation of the document`];
    const operationName = `${method.toUpperCase()} ${path}`;
    const responses = operation.responses ?? {};
    const status = String(response.status);
    const key = [status, `${status[0]}XX`, 'default'].find((k) => responses[k]);
    if (!key)
      return [
        `status ${status} is not documented for ${operationName} (documented: ${Object.keys(responses).join(', ')})`,
      ];
    return this.responseProblems(
      response,
      responses[key],
      ['paths', path, method, 'responses', key],
      `${operationName} ${key}`,
    );
  }

  /**
   * An answer no route made: one of the statuses the platform answers before routing, in the
   * service's error dialect (the document's error component), a 405 naming what the path takes.
   */
  private unroutedProblems(response: ObservedResponse): string[] {
    if (!this.unrouted.has(response.status))
      return [
        `status ${response.status} answered without a route; before routing only ` +
          `${[...this.unrouted].join(', ')} are answered, in the error dialect`,
      ];
    const problems =
      response.status === 405 && response.headers.allow === undefined ? ['a 405 without Allow'] : [];
    const schemaPath = ['components', 'schemas', this.options.error.schema];
    return [
      ...problems,
      ...this.responseProblems(response, this.errorResponse, null, `unrouted ${response.status}`, schemaPath),
    ];
  }

  private responseProblems(
    response: ObservedResponse,
    documented: Response,
    at: string[] | null,
    name: string,
    errorSchemaPath?: string[],
  ): string[] {
    const problems: string[] = [];
    for (const [header, spec] of Object.entries(documented.headers ?? {})) {
      const value = response.headers[header.toLowerCase()];
      if (value === undefined) {
        if (spec.required) problems.push(`no ${header} header, which the document requires`);
        continue;
      }
      if (!spec.schema || !at) continue;
      const validate = this.compile([...at, 'headers', header, 'schema'], () =>
        this.headerAjv.compile({
          type: 'object',
          properties: { value: spec.schema as object },
        }),
      );
      if (!validate({ value: Array.isArray(value) ? value.join(', ') : String(value) }))
        problems.push(`header ${header}: ${describeErrors(validate.errors).replace(/^\/value /, '')}`);
    }
    const bodyless = response.method === 'HEAD' || response.status === 204 || response.status === 304;
    const body = response.body;
    const sent = body === undefined ? undefined : typeof body === 'string' ? body : body.toString('utf8');
    const media = mediaTypeOf(response.headers);
    const contents = documented.content ?? {};
    const listed = Object.keys(contents);
    if (!listed.length) {
      if (!bodyless && sent !== undefined && sent.length > 0)
        problems.push(`a body (${media || 'no content type'}) where ${name} documents none`);
      return problems;
    }
    if (bodyless) return problems;
    const match =
      listed.find((m) => m.toLowerCase() === media) ??
      listed.find((m) => m.endsWith('/*') && media.startsWith(m.slice(0, -1)));
    if (!match) {
      problems.push(`content type "${media || 'none'}" where ${name} documents ${listed.join(', ')}`);
      return problems;
    }
    // A stream (event stream, file): its status, type and headers are what can be checked here.
    if (sent === undefined || !contents[match].schema) return problems;
    let value: unknown = sent;
    if (JSON_MEDIA.test(match)) {
      try {
        value = JSON.parse(sent);
      } catch {
        problems.push(`the body is not JSON: ${JSON.stringify(sent.slice(0, 120))}`);
        return problems;
      }
    } else if (!match.startsWith('text/')) return problems;
    const schemaPath = errorSchemaPath ?? [...at!, 'content', match, 'schema'];
    const validate = this.compile(schemaPath, () =>
      this.ajv.compile({ $ref: `openapi.json#/${pointer(schemaPath)}` }),
    );
    if (!validate(value)) problems.push(`body: ${describeErrors(validate.errors)}`);
    return problems;
  }

  private compile(path: string[], make: () => ValidateFunction): ValidateFunction {
    const key = pointer(path);
    let validate = this.compiled.get(key);
    if (!validate) {
      validate = make();
      this.compiled.set(key, validate);
    }
    return validate;
  }
}
