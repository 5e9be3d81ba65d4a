/**
 * What a test says about its service's routes, and the request drafts the generator edits: a route's
 * valid example made into a draft, and a draft made into the bytes sent.
 */
import { cloneBody, isPlainObject, serializeBody, setPath } from './json';

/** A JSON Schema as the route declares it (TypeBox schemas are JSON Schemas). */
export type JsonSchema = Record<string, unknown>;

/** What a test says about one route of its service. */
export interface HostileRoute {
  method: string;
  /** Fastify's form: `/api/users/:id`. */
  path: string;
  /** Valid example values, as text (a path parameter as it appears in the URL, unencoded). */
  params?: Record<string, string>;
  query?: Record<string, string>;
  /** A valid example JSON body (routes that take one). */
  body?: Record<string, unknown>;
  /** The route needs credentials: the storm sends it with good ones, none and bad ones. */
  auth?: boolean;
  /** The route's own schemas (its OpenAPI document's, or its TypeBox schemas). */
  schemas?: { body?: JsonSchema; query?: JsonSchema; params?: JsonSchema };
  /**
   * What the route's handler enforces beyond its schemas, as JSON Schemas checked after them (e.g.
   * "one of two alias fields is required", "user_id names an existing user").
   */
  rules?: { body?: JsonSchema; query?: JsonSchema; params?: JsonSchema };
  /** The other methods the same path answers (a wrong method must be none of these). */
  otherMethods?: string[];
}

/** `"METHOD /path"`: how reports name a route. */
export const routeKey = (route: HostileRoute) => `${route.method} ${route.path}`;

/** One generated request, before it goes on the wire. */
export interface HostileRequest {
  method: string;
  /** Path and query string, percent-encoded as sent. */
  url: string;
  headers: Record<string, string>;
  body?: Buffer;
}

/** How a credentialed route is called: with a valid credential, without one, or with a bad one. */
export type AuthKind = 'valid' | 'none' | 'bad';

/** A request being built: structured parts the mutations work on. */
export interface DraftRequest {
  method: string;
  pathParams: Record<string, string>;
  /** Query pairs as sent (percent-encoded); a name may repeat. */
  query: [string, string][];
  headers: Record<string, string>;
  /** A JSON body (HostileLeaf leaves allowed), `undefined` for none. */
  body?: unknown;
  /** A body sent as these bytes instead of `body`. */
  rawBody?: Buffer;
  /** A body over the limit: `body` with a filler field of this many characters (made when sent). */
  filler?: number;
  /** Extra text spliced into the path. */
  pathSuffix?: string;
}

/**
 * The choices an `Authenticate` makes (which bad credential, body or header), drawn by fast-check
 * with the rest of the request: they replay with the seed and shrink toward the first item.
 */
export interface Choices {
  pick<T>(items: readonly T[]): T;
  chance(p: number): boolean;
}

/** Choices read from drawn numbers (0 to 0xffff), in turn, starting over when they run out. */
export function choicesFrom(draws: readonly number[]): Choices {
  let at = 0;
  const next = () => draws[at++ % draws.length] ?? 0;
  return {
    pick: <T>(items: readonly T[]) => {
      if (items.length === 0) throw new Error('Choices.pick: nothing to pick from');
      return items[next() % items.length];
    },
    chance: (p: number) => next() / 0x10000 < p,
  };
}

/** Sets credentials on a draft: body fields, headers (a bearer token), as the service takes them. */
export type Authenticate = (
  draft: DraftRequest,
  kind: AuthKind,
  choices: Choices,
  route: HostileRoute,
) => void;

export const JSON_TYPE = 'application/json';

/** The route's valid example as a draft. */
export function exampleDraft(route: HostileRoute): DraftRequest {
  return {
    method: route.method,
    pathParams: { ...(route.params ?? {}) },
    query: Object.entries(route.query ?? {}).map(([k, v]) => [k, encodeURIComponent(v)]),
    headers: route.body !== undefined ? { 'content-type': JSON_TYPE } : {},
    body: route.body === undefined ? undefined : cloneBody(route.body),
  };
}

export const cloneDraft = (d: DraftRequest): DraftRequest => ({
  ...d,
  pathParams: { ...d.pathParams },
  query: d.query.map(([k, v]) => [k, v] as [string, string]),
  headers: { ...d.headers },
  body: cloneBody(d.body),
});

/** The request on the wire: URL, headers and body bytes. */
export function buildRequest(route: HostileRoute, draft: DraftRequest): HostileRequest {
  let path = route.path.replace(/:([A-Za-z0-9_]+)/g, (_m, name: string) => {
    const value = draft.pathParams[name] ?? '';
    // Example values are plain text; hostile ones are already encoded.
    return route.params?.[name] === value ? encodeURIComponent(value) : value;
  });
  if (draft.pathSuffix) path += draft.pathSuffix;
  const query = draft.query.map(([k, v]) => `${encodeURIComponent(k)}=${v}`).join('&');
  const url = query ? `${path}?${query}` : path;
  const body =
    draft.filler !== undefined
      ? Buffer.from(serializeBody(setPath(cloneBody(draft.body), ['x_filler'], 'o'.repeat(draft.filler))))
      : (draft.rawBody ??
        (draft.body === undefined ? undefined : Buffer.from(serializeBody(draft.body), 'utf8')));
  const headers = { ...draft.headers };
  if (body && !headers['content-type']) headers['content-type'] = JSON_TYPE;
  return { method: draft.method, url, headers, body };
}

/**
 * The length of the body a draft is sent with, without making its bytes (JSON text is cheap to join
 * and measure; hostile texts are ASCII where they are long).
 */
export function bodyLength(draft: DraftRequest): number {
  if (draft.rawBody) return draft.rawBody.length;
  if (draft.filler !== undefined)
    return serializeBody(setPath(cloneBody(draft.body), ['x_filler'], '')).length + draft.filler;
  return draft.body === undefined ? 0 : serializeBody(draft.body).length;
}

/** Paths of fields a body schema (and the handler's rules) declare, nested objects included. */
export function fieldPaths(schemas: (JsonSchema | undefined)[], example: unknown): string[][] {
  const paths = new Map<string, string[]>();
  const walk = (schema: JsonSchema | undefined, prefix: string[], depth: number) => {
    if (!schema || depth > 3) return;
    for (const branch of [schema, ...((schema.anyOf ?? schema.allOf ?? []) as JsonSchema[])]) {
      const props = (branch.properties ?? {}) as Record<string, JsonSchema>;
      for (const [name, child] of Object.entries(props)) {
        const path = [...prefix, name];
        paths.set(path.join('\u0001'), path);
        walk(child, path, depth + 1);
      }
    }
  };
  for (const schema of schemas) walk(schema, [], 0);
  const walkExample = (value: unknown, prefix: string[], depth: number) => {
    if (!isPlainObject(value) || depth > 3) return;
    for (const [name, child] of Object.entries(value)) {
      const path = [...prefix, name];
      paths.set(path.join('\u0001'), path);
      walkExample(child, path, depth + 1);
    }
  };
  walkExample(example, [], 0);
  return [...paths.values()];
}

/** Names of the query parameters a route declares (schema first, else the handler's rules). */
export const queryNames = (route: HostileRoute) =>
  Object.keys(((route.schemas?.query ?? route.rules?.query)?.properties ?? {}) as object);
