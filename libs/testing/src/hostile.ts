/**
 * Hostile-input storms: a seeded generator of requests that no service may accept (malformed JSON,
 * wrong types, huge and deep bodies, unicode edge cases, out-of-range numbers, bad percent-encoding,
 * long parameters, malformed HTTP framing), sent to a real listening server, with a check of every
 * answer: a 4xx in the service's own error format with its security headers.
 *
 * It knows no service: a test describes its routes (`HostileRoute`: a valid example, the route's
 * schemas, the rules its handlers add, whether it needs credentials) and hands over its dialect, body
 * limit and request rules. Every generated request carries at least one reason it must fail; reasons
 * that depend on schemas are confirmed with the same Ajv compiler and options the servers use, so a
 * request the generator believes invalid and the service accepts is reported (as a 2xx) instead of
 * silently passing.
 */
import { request as httpRequest, Agent, type IncomingHttpHeaders } from 'node:http';
import { createConnection } from 'node:net';
import AjvCompiler from '@fastify/ajv-compiler';
import { Value } from '@sinclair/typebox/value';
import type { TSchema } from '@sinclair/typebox';
import { annotationKeywords, TRIM } from '@platform/schema';
import type { Database } from '@platform/db';
import {
  BARE_SECURITY_HEADERS,
  findNul,
  MAX_PARAM_LENGTH,
  type ErrorDialect,
  type RequestRulesOptions,
} from '@platform/http-kit';

// ---------------------------------------------------------------------------------------------------
// Seeded randomness

/** The seed of a storm: HOSTILE_SEED when set (to replay a failure), else `fallback`. */
export function hostileSeed(fallback: number, env: NodeJS.ProcessEnv = process.env): number {
  const given = env.HOSTILE_SEED;
  if (given === undefined || given === '') return fallback >>> 0;
  const seed = Number(given);
  if (!Number.isSafeInteger(seed)) throw new Error(`HOSTILE_SEED must be an integer, not ${given}`);
  return seed >>> 0;
}

/** A small seeded PRNG (sfc32): the same seed gives the same storm on every machine. */
export class Random {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(readonly seed: number) {
    this.a = 0x9e3779b9;
    this.b = 0x243f6a88;
    this.c = 0xb7e15162;
    this.d = seed >>> 0;
    for (let i = 0; i < 15; i++) this.next();
  }

  /** A float in [0, 1). */
  next(): number {
    this.a >>>= 0;
    this.b >>>= 0;
    this.c >>>= 0;
    this.d >>>= 0;
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return (t >>> 0) / 4294967296;
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('Random.pick: nothing to pick from');
    return items[this.int(items.length)];
  }

  chance(p: number): boolean {
    return this.next() < p;
  }
}

// ---------------------------------------------------------------------------------------------------
// Hostile values

/**
 * A value for a JSON body: `json` is the text sent (it may be what `JSON.stringify` cannot write,
 * such as `1e309` or `-0`), `value` what the server's parser makes of it (deep values keep only their
 * type, which is all the schema check needs).
 */
export interface HostileValue {
  label: string;
  json: string;
  value: unknown;
}

const DEEP = 10_000;
const literal = (label: string, value: unknown): HostileValue => ({
  label,
  json: JSON.stringify(value),
  value,
});
const raw = (label: string, json: string, value: unknown): HostileValue => ({ label, json, value });

/** Unicode edge cases, none of them NUL (NUL has its own values): each also in a longer text. */
export const UNICODE_EDGE_STRINGS: readonly string[] = [
  '\ud800',
  '\udfff',
  'a\ud800b',
  '\udc00\ud800',
  '\ud83d',
  '\u202e\u202dreversed',
  'e\u0301\u0301\u0301\u0301',
  '\ufeffbom',
  '\uffff\ufffe',
  '\u{10ffff}',
  '\u200b\u200c\u200d\u2060',
  '\u0001\u001f\u007f\u0085',
  '\u2028\u2029',
  '\u00a0\u2003\u3000',
  '😀👩‍👩‍👧‍👦🏳️‍🌈',
  'İıſK',
  '\\u0000',
  '%00%ZZ',
  "'; DROP TABLE users; --",
  '../../../etc/passwd',
  '<script>alert(1)</script>',
];

/**
 * Integers beyond the ranges an integer parameter can have (int4, JavaScript's exact integers 2^53,
 * int8), their negatives, huge decimal texts and exponent forms of them, as JSON numbers and texts
 * write them (`1e+23` is what `String(1e23)` gives). Integers a server reads as numbers either refuse
 * them or name nothing with them: PostgreSQL must never see one it cannot hold.
 */
export const OUT_OF_RANGE_INTEGERS: readonly string[] = [
  '2147483648',
  '-2147483649',
  '4294967296',
  '9007199254740992',
  '9007199254740993',
  '-9007199254740993',
  '9223372036854775807',
  '9223372036854775808',
  '-9223372036854775809',
  '18446744073709551616',
  '99999999999999999999999',
  '-99999999999999999999999',
  '1e+23',
  '1E23',
  '-1e23',
  '2.147483648e9',
  '9.3e18',
];

/** Numbers that are not integers at all, next to the boundaries: fractions, non-finite. */
const NOT_INTEGERS: readonly string[] = ['2147483647.5', '1.5', '1e309', '-1e309'];

/** A text as sent in a URL: a `+` would be read as a space. */
export const inUrl = (text: string) => text.replace(/\+/g, '%2B');

/** The integers at the edge of int4 itself, sent where the schemas refuse them (a bound of their own). */
const INT4_EDGES: readonly string[] = ['2147483647', '-2147483648'];

/**
 * JSON values no schema field accepts in every form: texts (empty, blank, huge, NUL, unicode edge
 * cases, numbers as text), numbers (non-finite, -0, huge, fractional, out of 32-bit range), booleans,
 * null, arrays and objects (empty, nested 10,000 deep, with NUL keys). `huge` bounds the longest text.
 */
export function hostileJsonValues(huge: number): HostileValue[] {
  const deepArray = `${'['.repeat(DEEP)}${']'.repeat(DEEP)}`;
  const deepObject = `${'{"a":'.repeat(DEEP)}1${'}'.repeat(DEEP)}`;
  return [
    literal('empty string', ''),
    literal('blank string', '   '),
    literal('unicode blank', '\u00a0\u2003\ufeff\u3000'),
    literal('NUL', '\u0000'),
    literal('NUL inside', 'ab\u0000cd'),
    ...UNICODE_EDGE_STRINGS.map((s, i) => literal(`unicode edge ${i}`, s)),
    literal('long string', 'x'.repeat(300)),
    literal('long emoji string', '😀'.repeat(300)),
    literal('huge string', 'h'.repeat(huge)),
    literal('lone surrogates, long', '\ud800'.repeat(300)),
    literal('text Infinity', 'Infinity'),
    literal('text 1e309', '1e309'),
    literal('text -1', '-1'),
    literal('text NaN', 'NaN'),
    literal('text null', 'null'),
    literal('text true', 'true'),
    literal('zero', 0),
    literal('minus one', -1),
    raw('negative zero', '-0', -0),
    literal('fraction', 1.5),
    literal('negative fraction', -0.5),
    literal('2^31', 2147483648),
    literal('-2^31-1', -2147483649),
    raw('2^53+1', '9007199254740993', Number('9007199254740993')),
    raw('huge integer', '123456789012345678901234567890', Number('123456789012345678901234567890')),
    ...OUT_OF_RANGE_INTEGERS.map((text) => raw(`integer ${text}`, text, Number(text))),
    ...OUT_OF_RANGE_INTEGERS.map((text) => literal(`integer text ${text}`, text)),
    raw('1e309', '1e309', Infinity),
    raw('-1e309', '-1e309', -Infinity),
    raw('1e400', '1e400', Infinity),
    literal('max double', Number.MAX_VALUE),
    literal('min double', 5e-324),
    literal('true', true),
    literal('false', false),
    literal('null', null),
    literal('empty array', []),
    literal('array of text', ['x']),
    literal('array of null', [null]),
    literal('big array', new Array(2000).fill(0)),
    raw('deep array', deepArray, [[]]),
    literal('empty object', {}),
    literal('object', { a: 1 }),
    raw('deep object', deepObject, { a: {} }),
    raw('NUL key', '{"k\\u0000":1}', { 'k\u0000': 1 }),
    raw('lone surrogate key', '{"\\ud800":1}', { '\ud800': 1 }),
  ];
}

/**
 * Texts for query strings and path parameters, already percent-encoded as sent: numbers the schemas
 * must refuse (non-finite, out of range, fractional), bad percent-encodings, invalid UTF-8, unicode.
 */
export const HOSTILE_TEXTS: readonly string[] = [
  'Infinity',
  '-Infinity',
  '+Infinity',
  'NaN',
  '1e309',
  '-1e309',
  '1e400',
  '-1',
  '0',
  '-0',
  '1.5',
  ...OUT_OF_RANGE_INTEGERS.map(inUrl),
  'abc',
  '',
  '%20',
  'true',
  'null',
  '%ZZ',
  '%',
  '%E0%A4%A',
  '%ED%A0%80',
  '%C0%AF',
  '%FF%FE',
  '%F4%90%80%80',
  '%00',
  'a%00b',
  '%F0%9F%98%80',
  '%E2%80%AE',
  '%EF%BB%BF',
  '..%2F..%2F',
  '%5B%5D',
  '%7B%7D',
];

// ---------------------------------------------------------------------------------------------------
// Routes and requests

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
  /** A JSON body (HostileValue leaves allowed), `undefined` for none. */
  body?: unknown;
  /** A body sent as these bytes instead of `body`. */
  rawBody?: Buffer;
  /** Extra text spliced into the path. */
  pathSuffix?: string;
}

/** Sets credentials on a draft: body fields, headers (a bearer token), as the service takes them. */
export type Authenticate = (draft: DraftRequest, kind: AuthKind, random: Random, route: HostileRoute) => void;

// ---------------------------------------------------------------------------------------------------
// The oracle: does the service have to refuse this request?

type Validate = ((data: unknown) => boolean) & { errors?: unknown[] | null };

/**
 * Validators compiled as the services compile theirs (Fastify's Ajv compiler, all errors, no
 * removal; bodies not coerced, query strings and parameters coerced from text).
 */
class SchemaOracle {
  private readonly forBody = AjvCompiler()({}, this.options(false) as never);
  private readonly forText = AjvCompiler()({}, this.options(true) as never);
  private readonly cache = new Map<JsonSchema, Validate>();

  private options(coerce: boolean) {
    return {
      customOptions: {
        allErrors: true,
        removeAdditional: false,
        useDefaults: true,
        coerceTypes: coerce,
        // OpenAPI documents carry `example`, and rules may leave `type` out: no schema strictness,
        // but numbers stay strict (Infinity is not a number), as in the services.
        strictSchema: false,
        strictTypes: false,
        strictTuples: false,
        strictNumbers: true,
      },
      plugins: [
        (ajv: { addKeyword(k: string): unknown }) => {
          for (const keyword of annotationKeywords) ajv.addKeyword(keyword);
          return ajv;
        },
      ],
    };
  }

  validator(schema: JsonSchema, part: 'body' | 'text'): Validate {
    let validate = this.cache.get(schema);
    if (!validate) {
      const compile = part === 'body' ? this.forBody : this.forText;
      validate = compile({
        schema,
        method: 'POST',
        url: '/',
        httpPart: part === 'body' ? 'body' : 'querystring',
      } as never) as Validate;
      this.cache.set(schema, validate);
    }
    return validate;
  }
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof HostileLeaf);

/** A HostileValue placed in a draft body. */
class HostileLeaf {
  constructor(readonly hostile: HostileValue) {}
}

/** What the server's JSON parser makes of a draft body. */
function parsedValue(body: unknown): unknown {
  if (body instanceof HostileLeaf) return structuredClone(body.hostile.value);
  if (Array.isArray(body)) return body.map(parsedValue);
  if (isPlainObject(body))
    return Object.fromEntries(Object.entries(body).map(([k, v]) => [k, parsedValue(v)]));
  return body;
}

/** The JSON text of a draft body, hostile leaves written as their raw JSON. */
function serializeBody(body: unknown): string {
  if (body instanceof HostileLeaf) return body.hostile.json;
  if (Array.isArray(body)) return `[${body.map(serializeBody).join(',')}]`;
  if (isPlainObject(body))
    return `{${Object.entries(body)
      .map(([k, v]) => `${JSON.stringify(k)}:${serializeBody(v)}`)
      .join(',')}}`;
  return JSON.stringify(body) ?? 'null';
}

/** Query values as the server decodes them (undecodable text stays as sent). */
function decodedQuery(pairs: [string, string][]): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of pairs) {
    const decoded = safeDecode(value.replace(/\+/g, ' '));
    const key = safeDecode(name);
    const previous = out[key];
    out[key] = previous === undefined ? decoded : [previous, decoded].flat();
  }
  return out;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

const hasNonFinite = (value: unknown): boolean =>
  typeof value === 'number'
    ? !Number.isFinite(value)
    : Array.isArray(value)
      ? value.some(hasNonFinite)
      : isPlainObject(value) && Object.values(value).some(hasNonFinite);

/** Top-level fields the request rules trim (a TRIM schema, or a union with a TRIM branch). */
function trimmedFields(schema: JsonSchema | undefined): string[] {
  const props = (schema?.properties ?? {}) as Record<string, JsonSchema>;
  return Object.entries(props)
    .filter(([, s]) => s[TRIM] || (s.anyOf as JsonSchema[] | undefined)?.some((b) => b[TRIM]))
    .map(([k]) => k);
}

// ---------------------------------------------------------------------------------------------------
// The storm

export interface StormOptions {
  /** `http://127.0.0.1:<port>` of the real, listening service. */
  baseUrl: string;
  routes: HostileRoute[];
  /** Requests to send over HTTP (framing exchanges on raw sockets come on top). */
  count: number;
  seed: number;
  /** The service's error format: every answer must be in it. */
  dialect: ErrorDialect;
  /** The service's body limit, in bytes. */
  bodyLimit: number;
  /** The service's request rules (how it reads empty bodies, NUL, trimming). */
  requestRules: RequestRulesOptions;
  /** Sets credentials for routes with `auth`. */
  authenticate?: Authenticate;
  /** Requests in flight at once (default 8). */
  concurrency?: number;
  /** Bytes of oversized bodies the storm may send in all (default 48 MiB). */
  hugeBodyBudget?: number;
}

/** One request that did not get the answer it must get. */
export interface StormFailure {
  request: string;
  reasons: string[];
  problems: string[];
  status?: number;
  body?: string;
}

export interface StormReport {
  seed: number;
  /** HTTP requests sent, and raw framing exchanges. */
  sent: number;
  framing: number;
  /** Answers by status. */
  statuses: Record<number, number>;
  /** Requests by the mutation that makes them invalid. */
  mutations: Record<string, number>;
  failures: StormFailure[];
  /**
   * The integer sweep: every integer parameter of every route (`"METHOD /path part.field"`), each
   * sent every out-of-range integer its schemas and rules refuse (`sent` requests in all).
   */
  integers: { targets: string[]; sent: number };
  durationMs: number;
}

/** A response as the check sees it: status, lower-case headers, body text. */
export interface SeenResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * What is wrong with an answer to a request the service must refuse: not a 4xx, not in the
 * dialect's content type or body schema (with the status inside the body where the dialect carries
 * it), or without the security headers.
 */
export function errorResponseProblems(dialect: ErrorDialect, response: SeenResponse): string[] {
  const problems: string[] = [];
  if (response.status < 400 || response.status > 499) problems.push(`status ${response.status}, not a 4xx`);
  const contentType = String(response.headers['content-type'] ?? '');
  const media = (t: string) => t.toLowerCase().replace(/\s+/g, '');
  if (media(contentType) !== media(dialect.contentType))
    problems.push(`content-type "${contentType}", not "${dialect.contentType}"`);
  for (const name of Object.keys(BARE_SECURITY_HEADERS))
    if (response.headers[name] === undefined) problems.push(`no ${name} header`);
  if (
    response.headers['x-content-type-options'] !== undefined &&
    response.headers['x-content-type-options'] !== 'nosniff'
  )
    problems.push('x-content-type-options is not nosniff');
  let body: unknown;
  try {
    body = JSON.parse(response.body);
  } catch {
    problems.push('body is not JSON');
    return problems;
  }
  const schema = dialect.schemas.find((s) => s.$id === dialect.schemaRef) as TSchema | undefined;
  if (!schema) throw new Error(`the dialect has no schema ${dialect.schemaRef}`);
  if (!Value.Check(schema, dialect.schemas, body)) problems.push('body is not in the dialect');
  // The dialect's own answer to this status says where (if anywhere) the status sits in the body.
  const sample = dialect.body({ status: response.status, detail: '' }) as Record<string, unknown>;
  for (const [key, value] of Object.entries(sample))
    if (value === response.status && (body as Record<string, unknown>)[key] !== response.status)
      problems.push(`body.${key} is not ${response.status}`);
  return problems;
}

interface Generated {
  request: HostileRequest;
  mutation: string;
  reasons: string[];
}

const JSON_TYPE = 'application/json';
const NOT_JSON_TYPES = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/xml',
  'application/octet-stream',
  'text/json',
  'application/vnd.api+json',
  'application/json-patch+json',
  'image/png',
];
const WRONG_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'PROPFIND', 'MKCOL', 'PURGE', 'TRACE'];
const BAD_PATH_BITS = ['%ZZ', '%', '%E0%A4%A', '%ED%A0%80', '%C0%AF', '%FF', '%00', '%F4%90%80%80'];
const MALFORMED_JSON = [
  '{',
  '{"a":',
  '{"a":1,}',
  "{'a':1}",
  '{"a":Infinity}',
  '{"a":-Infinity}',
  '{"a":NaN}',
  '{"a":undefined}',
  '{"a":0x1F}',
  '{"a":01}',
  '{"a":.5}',
  '{"a":+1}',
  '{"a":1}}',
  '{"a":1} x',
  '{"a":"\\x41"}',
  '{"a":"\\ud800\\"}',
  '{"a":1 /* c */}',
  '[1,2',
  '"unterminated',
  'nul\u0000l',
];
const PROTO_BODIES = ['{"__proto__":{"polluted":true}}', '{"constructor":{"prototype":{"polluted":true}}}'];

/** Paths of fields a body schema (and the handler's rules) declare, nested objects included. */
function fieldPaths(schemas: (JsonSchema | undefined)[], example: unknown): string[][] {
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

function setPath(body: unknown, path: string[], value: unknown): unknown {
  const root = isPlainObject(body) ? body : {};
  let node: Record<string, unknown> = root;
  for (const key of path.slice(0, -1)) {
    if (!isPlainObject(node[key])) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[path[path.length - 1]] = value;
  return root;
}

function deletePath(body: unknown, path: string[]): boolean {
  let node = body;
  for (const key of path.slice(0, -1)) {
    if (!isPlainObject(node)) return false;
    node = node[key];
  }
  if (!isPlainObject(node) || !(path[path.length - 1] in node)) return false;
  delete node[path[path.length - 1]];
  return true;
}

const cloneDraft = (d: DraftRequest): DraftRequest => ({
  ...d,
  pathParams: { ...d.pathParams },
  query: d.query.map(([k, v]) => [k, v] as [string, string]),
  headers: { ...d.headers },
  body: cloneBody(d.body),
});
function cloneBody(body: unknown): unknown {
  if (body instanceof HostileLeaf) return body;
  if (Array.isArray(body)) return body.map(cloneBody);
  if (isPlainObject(body)) return Object.fromEntries(Object.entries(body).map(([k, v]) => [k, cloneBody(v)]));
  return body;
}

const encodeParam = (text: string) => encodeURIComponent(text);

// ---------------------------------------------------------------------------------------------------
// Integer parameters

/** A parameter the integer sweep aims at: where it is, and its name (a body field's path). */
interface IntegerTarget {
  part: 'params' | 'query' | 'body';
  path: string[];
}

/** A schema with its alternatives and conditional branches, each a place a field may be declared. */
function branches(node: JsonSchema): JsonSchema[] {
  const nested = ['anyOf', 'oneOf', 'allOf'].flatMap((k) => (node[k] as JsonSchema[] | undefined) ?? []);
  const conditional = ['then', 'else'].map((k) => node[k] as JsonSchema | undefined).filter((n) => !!n);
  return [node, ...[...nested, ...conditional].flatMap(branches)];
}

/** Every declaration of the field at `path` in `schemas`. */
function declarationsAt(schemas: (JsonSchema | undefined)[], path: string[]): JsonSchema[] {
  let nodes = schemas.filter((n): n is JsonSchema => !!n);
  for (const key of path)
    nodes = nodes
      .flatMap(branches)
      .map((n) => (n.properties as Record<string, JsonSchema> | undefined)?.[key])
      .filter((n): n is JsonSchema => !!n);
  return nodes.flatMap(branches);
}

function exampleAt(example: unknown, path: string[]): unknown {
  let node = example;
  for (const key of path) node = isPlainObject(node) ? node[key] : undefined;
  return node;
}

/**
 * Whether a parameter is an integer: declared `integer` by its schema or the handler's rules, or
 * given an integer example (digits in a path or query, an integer in a body) where nothing declares
 * it a (fractional) number.
 */
function isIntegerParameter(declarations: JsonSchema[], example: unknown): boolean {
  const types = declarations.flatMap((d) => [d.type].flat()).filter((t) => typeof t === 'string');
  if (types.includes('integer')) return true;
  if (types.includes('number')) return false;
  return typeof example === 'number' ? Number.isInteger(example) : /^-?[0-9]+$/.test(String(example ?? ''));
}

/** The integer parameters of a route, in its path, query string and body. */
export function integerParameters(route: HostileRoute): IntegerTarget[] {
  const targets: IntegerTarget[] = [];
  for (const part of ['params', 'query'] as const) {
    const example = part === 'params' ? route.params : route.query;
    const declared = [route.schemas?.[part], route.rules?.[part]];
    const names = new Set([
      ...declared.flatMap((d) => Object.keys((d?.properties ?? {}) as object)),
      ...Object.keys(example ?? {}),
    ]);
    for (const name of names)
      if (isIntegerParameter(declarationsAt(declared, [name]), example?.[name]))
        targets.push({ part, path: [name] });
  }
  const declared = [route.schemas?.body, route.rules?.body];
  for (const path of fieldPaths(declared, route.body))
    if (isIntegerParameter(declarationsAt(declared, path), exampleAt(route.body, path)))
      targets.push({ part: 'body', path });
  return targets;
}

/** What the sweep sends to an integer in a path or query string (as sent), and in a JSON body. */
const SWEEP_TEXTS = [...INT4_EDGES, ...OUT_OF_RANGE_INTEGERS, ...NOT_INTEGERS, 'Infinity'].map(inUrl);
const SWEEP_JSON: HostileValue[] = [
  ...[...INT4_EDGES, ...OUT_OF_RANGE_INTEGERS, ...NOT_INTEGERS].map((text) => raw(text, text, Number(text))),
  ...['2147483648', '-2147483649', '9223372036854775808', '99999999999999999999999', '1e+23'].map((text) =>
    literal(`"${text}"`, text),
  ),
];

/** One request of the integer sweep, or a value the route's schemas and rules would let through. */
interface SweepItem {
  target: string;
  value: string;
  generated?: Generated;
}

/** Generates the storm's requests, one at a time, deterministically from its seed. */
export class HostileGenerator {
  readonly random: Random;
  private readonly oracle = new SchemaOracle();
  private readonly values: HostileValue[];
  private hugeBytesLeft: number;

  constructor(private readonly options: Omit<StormOptions, 'baseUrl' | 'count'>) {
    this.random = new Random(options.seed);
    // A text a bit over the body limit: on its own it makes any body too large.
    this.values = hostileJsonValues(Math.min(options.bodyLimit + 1024, 2 * 1024 * 1024));
    this.hugeBytesLeft = options.hugeBodyBudget ?? 48 * 1024 * 1024;
  }

  /** Reasons the service must refuse `draft` because of its schemas, rules or request rules (none: it may accept it). */
  schemaReasons(route: HostileRoute, draft: DraftRequest): string[] {
    const reasons: string[] = [];
    const rules = this.options.requestRules;
    // The path parameters, coerced from text; one that cannot be decoded is a bad URL (400).
    for (const [name, value] of Object.entries(draft.pathParams))
      if (safeDecode(value) === value && /%/.test(value))
        reasons.push(`path parameter ${name} cannot be decoded`);
    const params = Object.fromEntries(Object.entries(draft.pathParams).map(([k, v]) => [k, safeDecode(v)]));
    reasons.push(...this.check('params', route.schemas?.params, route.rules?.params, params, 'text'));
    reasons.push(
      ...this.check('query', route.schemas?.query, route.rules?.query, decodedQuery(draft.query), 'text'),
    );
    if (route.schemas?.body || route.rules?.body) {
      let body = draft.body === undefined ? undefined : parsedValue(draft.body);
      if (body === undefined || (rules.blankBodyIsEmpty && body === null)) {
        if (rules.emptyBody === 'reject' && draft.body === undefined) return [...reasons, 'no body'];
        body = {};
      }
      const nul = rules.rejectNul ? findNul(body) : undefined;
      if (nul) reasons.push(`NUL in ${nul}`);
      if (rules.trim && isPlainObject(body))
        for (const field of trimmedFields(route.schemas?.body))
          if (typeof body[field] === 'string') body[field] = (body[field] as string).trim();
      reasons.push(...this.check('body', route.schemas?.body, route.rules?.body, body, 'body'));
    }
    return reasons;
  }

  private check(
    part: string,
    schema: JsonSchema | undefined,
    rule: JsonSchema | undefined,
    value: unknown,
    mode: 'body' | 'text',
  ): string[] {
    const reasons: string[] = [];
    const data = structuredClone(value);
    if (schema && !this.oracle.validator(schema, mode)(data)) reasons.push(`${part} fails its schema`);
    // Ajv coerces `Infinity` and `1e309` to numbers and then checks no bound: the services refuse them.
    else if (mode === 'text' && hasNonFinite(data)) reasons.push(`${part} has a non-finite number`);
    if (rule && !this.oracle.validator(rule, mode)(structuredClone(schema ? data : value)))
      reasons.push(`${part} breaks the handler's rules`);
    return reasons;
  }

  /** A request for `route` the service must refuse, with what makes it so. */
  next(route: HostileRoute): Generated {
    const r = this.random;
    for (let attempt = 0; attempt < 30; attempt++) {
      const draft = this.example(route);
      const auth: AuthKind = route.auth
        ? r.pick<AuthKind>(['valid', 'valid', 'valid', 'valid', 'none', 'bad'])
        : 'valid';
      if (route.auth && this.options.authenticate) this.options.authenticate(draft, auth, r, route);
      const mutation = this.pickMutation(route, draft);
      const requestReasons = this.mutate(mutation, route, draft);
      if (requestReasons === undefined) continue; // not applicable here: try another
      if (auth !== 'valid') requestReasons.push(`credentials: ${auth}`);
      // Noise on top, never where it could undo the mutation: dropped if it does.
      const beforeNoise = cloneDraft(draft);
      this.addNoise(draft);
      let reasons = [...requestReasons, ...this.schemaReasons(route, draft)];
      if (reasons.length === 0) {
        reasons = [...requestReasons, ...this.schemaReasons(route, beforeNoise)];
        if (reasons.length === 0) continue;
        return { request: this.build(route, beforeNoise), mutation, reasons };
      }
      return { request: this.build(route, draft), mutation, reasons };
    }
    // Nothing found on this route: a wrong method is always wrong.
    const draft = this.example(route);
    this.mutate('wrong method', route, draft);
    return { request: this.build(route, draft), mutation: 'wrong method', reasons: ['wrong method'] };
  }

  /**
   * The integer sweep of one route: each integer parameter (`integerParameters`) set, with valid
   * credentials, to every value of the sweep. A value the schemas and rules refuse becomes a request
   * the service must refuse. A value they accept that is no exact JavaScript integer is reported
   * without a request (`generated` absent): the route declares no range for that parameter. One
   * within the exact integers (2^31, the int4 edges) they accept is not sent: a bigint may hold it.
   */
  integerSweep(route: HostileRoute): SweepItem[] {
    const items: SweepItem[] = [];
    for (const target of integerParameters(route)) {
      const label = `${route.method} ${route.path} ${target.part}.${target.path.join('.')}`;
      const values = target.part === 'body' ? SWEEP_JSON : SWEEP_TEXTS.map((t) => raw(t, t, t));
      for (const value of values) {
        const draft = this.example(route);
        if (route.auth && this.options.authenticate)
          this.options.authenticate(draft, 'valid', this.random, route);
        const name = target.path[0];
        if (target.part === 'params') draft.pathParams[name] = value.json;
        else if (target.part === 'query') {
          draft.query = draft.query.filter(([k]) => k !== name);
          draft.query.push([name, value.json]);
        } else if (isPlainObject(draft.body) || draft.body === undefined)
          draft.body = setPath(draft.body ?? {}, target.path, new HostileLeaf(value));
        else continue;
        const text = target.part === 'body' ? value.json : safeDecode(value.json);
        const reasons = this.schemaReasons(route, draft);
        if (reasons.length)
          items.push({
            target: label,
            value: text,
            generated: { request: this.build(route, draft), mutation: 'integer out of range', reasons },
          });
        else if (!Number.isSafeInteger(Number(typeof value.value === 'string' ? value.value : text)))
          items.push({ target: label, value: text });
      }
    }
    return items;
  }

  private example(route: HostileRoute): DraftRequest {
    return {
      method: route.method,
      pathParams: { ...(route.params ?? {}) },
      query: Object.entries(route.query ?? {}).map(([k, v]) => [k, encodeURIComponent(v)]),
      headers: route.body !== undefined ? { 'content-type': JSON_TYPE } : {},
      body: route.body === undefined ? undefined : cloneBody(route.body),
    };
  }

  private pickMutation(route: HostileRoute, draft: DraftRequest): string {
    const takesBody = route.schemas?.body !== undefined || route.body !== undefined;
    const weighted: [string, number][] = [
      ['wrong method', 1],
      ['bad percent-encoding in the path', 2],
      ['long url', 1],
      ['oversized header', 1],
    ];
    if (Object.keys(draft.pathParams).length)
      weighted.push(['hostile path parameter', 5], ['long path parameter', 1]);
    if (route.schemas?.query || route.rules?.query)
      weighted.push(['hostile query value', 8], ['repeated query parameter', 2]);
    if (takesBody)
      weighted.push(
        ['hostile field value', 14],
        ['missing field', 4],
        ['extra field', 2],
        ['hostile body shape', 3],
        ['malformed JSON', 3],
        ['prototype pollution', 1],
        ['not JSON', 2],
      );
    if (takesBody && this.hugeBytesLeft > this.options.bodyLimit) weighted.push(['oversized body', 1]);
    const total = weighted.reduce((n, [, w]) => n + w, 0);
    let at = this.random.next() * total;
    for (const [name, w] of weighted) if ((at -= w) < 0) return name;
    return weighted[0][0];
  }

  /**
   * Applies a mutation. Answers the reasons it makes the request invalid by itself (empty: the
   * schema check decides), or undefined when it does not apply to this draft.
   */
  private mutate(mutation: string, route: HostileRoute, draft: DraftRequest): string[] | undefined {
    const r = this.random;
    switch (mutation) {
      case 'wrong method': {
        const taken = new Set([route.method, ...(route.otherMethods ?? []), 'HEAD', 'OPTIONS']);
        draft.method = r.pick(WRONG_METHODS.filter((m) => !taken.has(m)));
        return ['wrong method'];
      }
      case 'bad percent-encoding in the path':
        draft.pathSuffix = r.pick(BAD_PATH_BITS) + (r.chance(0.5) ? r.pick(['', 'x', '/', '/..']) : '');
        return ['bad percent-encoding in the path'];
      case 'long url':
        // Over Node's 16 KB header limit: a 431 before any route.
        if (r.chance(0.5)) draft.pathSuffix = `/${'u'.repeat(17 * 1024)}`;
        else draft.query.push(['x_long', 'q'.repeat(17 * 1024)]);
        return ['url over the header limit'];
      case 'oversized header':
        draft.headers[r.pick(['x-hostile', 'cookie', 'accept', 'user-agent'])] = 'h'.repeat(17 * 1024);
        return ['headers over the limit'];
      case 'hostile path parameter': {
        const name = r.pick(Object.keys(draft.pathParams));
        draft.pathParams[name] = r.chance(0.7)
          ? r.pick(HOSTILE_TEXTS)
          : encodeParam(r.pick(UNICODE_EDGE_STRINGS.filter(isWellFormed)));
        if (draft.pathParams[name] === '') return undefined; // an empty parameter is another route
        return [];
      }
      case 'long path parameter': {
        const name = r.pick(Object.keys(draft.pathParams));
        draft.pathParams[name] = 'p'.repeat(MAX_PARAM_LENGTH + 1 + r.int(2000));
        return ['path parameter over the length limit'];
      }
      case 'hostile query value': {
        const names = Object.keys(((route.schemas?.query ?? route.rules?.query)?.properties ?? {}) as object);
        if (!names.length) return undefined;
        const name = r.pick(names);
        const value = r.chance(0.8)
          ? r.pick(HOSTILE_TEXTS)
          : encodeParam(r.pick(UNICODE_EDGE_STRINGS.filter(isWellFormed)));
        draft.query = draft.query.filter(([k]) => k !== name);
        draft.query.push([name, value]);
        return [];
      }
      case 'repeated query parameter': {
        const names = Object.keys(((route.schemas?.query ?? route.rules?.query)?.properties ?? {}) as object);
        if (!names.length) return undefined;
        const name = r.pick(names);
        const current = draft.query.find(([k]) => k === name)?.[1] ?? '1';
        draft.query.push([name, current], [name, r.pick(HOSTILE_TEXTS)]);
        return [];
      }
      case 'hostile field value': {
        const paths = fieldPaths([route.schemas?.body, route.rules?.body], route.body);
        if (!paths.length || !isPlainObject(draft.body)) return undefined;
        draft.body = setPath(draft.body, r.pick(paths), new HostileLeaf(r.pick(this.values)));
        return this.budget(draft) ? [] : undefined;
      }
      case 'missing field': {
        const paths = fieldPaths([route.schemas?.body, route.rules?.body], route.body);
        if (!paths.length || !deletePath(draft.body, r.pick(paths))) return undefined;
        return [];
      }
      case 'extra field': {
        if (!isPlainObject(draft.body)) return undefined;
        const key = r.pick([
          'x_hostile',
          'k\u0000',
          '\ud800',
          '',
          ' ',
          'a'.repeat(1000),
          '😀',
          '$where',
          // Names every plain object inherits: a dialect grouping errors by field in `{}` trips on them.
          'constructor',
          'toString',
          'hasOwnProperty',
          'valueOf',
        ]);
        draft.body[key] = new HostileLeaf(r.pick(this.values));
        return this.budget(draft) ? [] : undefined;
      }
      case 'hostile body shape': {
        const shape = r.pick([
          '[]',
          '"text"',
          '1',
          'true',
          'null',
          'deep array',
          'deep object',
          '{}',
          'none',
          'array of the example',
        ]);
        if (shape === 'none') draft.body = undefined;
        else if (shape === 'array of the example') draft.body = [draft.body];
        else if (shape === 'deep array')
          draft.body = new HostileLeaf(this.values.find((v) => v.label === 'deep array')!);
        else if (shape === 'deep object')
          draft.body = new HostileLeaf(this.values.find((v) => v.label === 'deep object')!);
        else draft.body = JSON.parse(shape);
        if (draft.body === undefined && r.chance(0.5)) delete draft.headers['content-type'];
        return [];
      }
      case 'malformed JSON': {
        const text = r.chance(0.5) ? serializeBody(draft.body) : r.pick(MALFORMED_JSON);
        const cut = r.chance(0.5) && text.length > 1 ? text.slice(0, 1 + r.int(text.length - 1)) : text;
        const broken = cut === text && r.chance(0.5) ? `${text}${r.pick(['}', ',', ' x', ']'])}` : cut;
        try {
          JSON.parse(broken);
          return undefined; // still JSON: not this mutation
        } catch {
          draft.rawBody = Buffer.from(broken);
          return ['malformed JSON'];
        }
      }
      case 'prototype pollution':
        draft.rawBody = Buffer.from(r.pick(PROTO_BODIES));
        return ['prototype pollution'];
      case 'not JSON': {
        draft.headers['content-type'] = r.pick(NOT_JSON_TYPES);
        draft.rawBody = Buffer.from(r.chance(0.5) ? serializeBody(draft.body ?? {}) : 'name=x&a=%ZZ');
        return ['not JSON'];
      }
      case 'oversized body': {
        const filler = 'o'.repeat(this.options.bodyLimit + 1 + r.int(1024));
        draft.rawBody = Buffer.from(serializeBody(setPath(draft.body, ['x_filler'], filler)));
        this.hugeBytesLeft -= draft.rawBody.length;
        return ['body over the limit'];
      }
      default:
        throw new Error(`unknown mutation ${mutation}`);
    }
  }

  /** Keeps oversized bodies within the storm's budget. */
  private budget(draft: DraftRequest): boolean {
    const size = serializeBody(draft.body).length;
    if (size <= this.options.bodyLimit) return true;
    if (size > this.hugeBytesLeft) return false;
    this.hugeBytesLeft -= size;
    return true;
  }

  /** Harmless-looking extras: unicode in other fields, unknown fields and parameters, odd headers. */
  private addNoise(draft: DraftRequest) {
    const r = this.random;
    for (let i = r.int(3); i > 0; i--) {
      switch (r.int(5)) {
        case 0:
          if (isPlainObject(draft.body) && !draft.rawBody)
            draft.body[`x_noise_${r.int(100)}`] = literal('unicode', r.pick(UNICODE_EDGE_STRINGS)).value;
          break;
        case 1:
          draft.query.push([`x_noise_${r.int(100)}`, r.pick(HOSTILE_TEXTS)]);
          break;
        case 2: {
          // Only headers the mutation left alone: noise never replaces what makes the request invalid.
          const name = r.pick([
            'accept',
            'accept-language',
            'x-request-id',
            'x-forwarded-for',
            'referer',
            'origin',
          ]);
          draft.headers[name] ??= r.pick([
            '*/*',
            'x'.repeat(200),
            '..',
            '127.0.0.1, ::1, garbage',
            'application/xml;q=0',
            'null',
            'é\u00ff',
          ]);
          break;
        }
        case 3:
          draft.headers.cookie ??= r.pick([
            'refresh_token=%ZZ',
            'a=b; ; ;=;',
            'refresh_token=' + 'x'.repeat(500),
            'x="\\"',
          ]);
          break;
        case 4:
          if (draft.headers['content-type'] === JSON_TYPE)
            draft.headers['content-type'] = r.pick([
              'application/json; charset=utf-8',
              'APPLICATION/JSON',
              'application/json;charset=UTF-8',
            ]);
          break;
      }
    }
  }

  /** The request on the wire: URL, headers and body bytes. */
  build(route: HostileRoute, draft: DraftRequest): HostileRequest {
    let path = route.path.replace(/:([A-Za-z0-9_]+)/g, (_m, name: string) => {
      const value = draft.pathParams[name] ?? '';
      // Example values are plain text; hostile ones are already encoded.
      return route.params?.[name] === value ? encodeURIComponent(value) : value;
    });
    if (draft.pathSuffix) path += draft.pathSuffix;
    const query = draft.query.map(([k, v]) => `${encodeURIComponent(k)}=${v}`).join('&');
    const url = query ? `${path}?${query}` : path;
    const body =
      draft.rawBody ??
      (draft.body === undefined ? undefined : Buffer.from(serializeBody(draft.body), 'utf8'));
    const headers = { ...draft.headers };
    if (body && !headers['content-type']) headers['content-type'] = JSON_TYPE;
    return { method: draft.method, url, headers, body };
  }
}

/** Lone surrogates cannot be percent-encoded as UTF-8 (they have their own raw encodings above). */
const isWellFormed = (s: string) => {
  try {
    encodeURIComponent(s);
    return true;
  } catch {
    return false;
  }
};

// ---------------------------------------------------------------------------------------------------
// Sending

/** Sends one request over a keep-alive agent; resolves with what came back or the transport error. */
function send(agent: Agent, base: URL, request: HostileRequest): Promise<SeenResponse | Error> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (value: SeenResponse | Error) => {
      if (!settled) {
        settled = true;
        resolve(value);
      }
    };
    let req;
    try {
      req = httpRequest({
        agent,
        host: base.hostname,
        port: base.port,
        method: request.method,
        path: request.url,
        headers: {
          ...request.headers,
          ...(request.body ? { 'content-length': String(request.body.length) } : {}),
        },
        timeout: 15_000,
      });
    } catch (error) {
      done(error as Error);
      return;
    }
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        done({
          status: res.statusCode ?? 0,
          headers: res.headers as IncomingHttpHeaders,
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      );
      res.on('error', (e) => done(e));
    });
    req.on('timeout', () => {
      req.destroy(new Error('no answer within 15 s'));
    });
    req.on('error', (e) => done(e));
    req.end(request.body);
  });
}

const describeRequest = (r: HostileRequest) => {
  const body = r.body
    ? ` body(${r.body.length}B)=${JSON.stringify(r.body.subarray(0, 160).toString('utf8'))}`
    : '';
  const headers = Object.entries(r.headers)
    .map(([k, v]) => `${k}: ${v.length > 80 ? `${v.slice(0, 80)}…(${v.length})` : v}`)
    .join('; ');
  const url = r.url.length > 200 ? `${r.url.slice(0, 200)}…(${r.url.length})` : r.url;
  return `${r.method} ${url} [${headers}]${body}`;
};

/**
 * The routes in the order the storm visits them, each as often as it has parts to attack: a body,
 * a query string and path parameters weigh more than a bare path.
 */
export function routeSchedule(routes: HostileRoute[]): HostileRoute[] {
  return routes.flatMap((route) => {
    const weight =
      1 +
      (route.schemas?.body || route.body ? 6 : 0) +
      (route.schemas?.query || route.query ? 3 : 0) +
      (route.params && Object.keys(route.params).length ? 2 : 0);
    return Array.from({ length: weight }, () => route);
  });
}

/**
 * Sends `count` generated requests across `routes` (in `routeSchedule`'s order, the mutation and
 * its values drawn from the seed), `concurrency` at a time over keep-alive connections, then the
 * malformed-framing exchanges on raw sockets; checks every answer (`errorResponseProblems`).
 */
export async function runHostileStorm(options: StormOptions): Promise<StormReport> {
  const started = Date.now();
  const generator = new HostileGenerator(options);
  const base = new URL(options.baseUrl);
  // No Nagle delay: a request's headers and body go out in separate writes.
  const agent = new Agent({ keepAlive: true, maxSockets: options.concurrency ?? 8, noDelay: true } as never);
  const schedule = routeSchedule(options.routes);
  const report: StormReport = {
    seed: options.seed,
    sent: 0,
    framing: 0,
    statuses: {},
    mutations: {},
    failures: [],
    integers: { targets: [], sent: 0 },
    durationMs: 0,
  };
  const record = (
    generated: { description: string; mutation: string; reasons: string[] },
    seen: SeenResponse | Error,
  ) => {
    report.mutations[generated.mutation] = (report.mutations[generated.mutation] ?? 0) + 1;
    if (seen instanceof Error) {
      report.failures.push({
        request: generated.description,
        reasons: generated.reasons,
        problems: [`no answer: ${seen.message}`],
      });
      return;
    }
    report.statuses[seen.status] = (report.statuses[seen.status] ?? 0) + 1;
    const problems = errorResponseProblems(options.dialect, seen);
    if (problems.length)
      report.failures.push({
        request: generated.description,
        reasons: generated.reasons,
        problems,
        status: seen.status,
        body: seen.body.slice(0, 300),
      });
  };

  let next = 0;
  const worker = async () => {
    while (next < options.count) {
      const route = schedule[next % schedule.length];
      next++;
      const generated = generator.next(route);
      let seen = await send(agent, base, generated.request);
      // A server may close a connection it answered with `connection: close` (an oversized
      // request) while the body is still going out; the answer then comes on a retry only.
      if (seen instanceof Error && /ECONNRESET|EPIPE|socket hang up/.test(seen.message))
        seen = await send(agent, base, generated.request);
      record(
        {
          description: describeRequest(generated.request),
          mutation: generated.mutation,
          reasons: generated.reasons,
        },
        seen,
      );
      report.sent++;
    }
  };
  await Promise.all(Array.from({ length: options.concurrency ?? 8 }, worker));

  // The integer sweep: every integer parameter, every out-of-range integer (not drawn at random).
  const sweep = options.routes.flatMap((route) => generator.integerSweep(route));
  report.integers.targets = [...new Set(sweep.map((item) => item.target))];
  for (const item of sweep)
    if (!item.generated)
      report.failures.push({
        request: `${item.target} = ${item.value}`,
        reasons: ['an integer beyond JavaScript’s exact integers'],
        problems: ['its schemas and rules accept it: declare the parameter’s range'],
      });
  const requests = sweep.flatMap((item) => (item.generated ? [item.generated] : []));
  let nextSweep = 0;
  const sweeper = async () => {
    while (nextSweep < requests.length) {
      const generated = requests[nextSweep++];
      record(
        {
          description: describeRequest(generated.request),
          mutation: generated.mutation,
          reasons: generated.reasons,
        },
        await send(agent, base, generated.request),
      );
      report.integers.sent++;
    }
  };
  await Promise.all(Array.from({ length: options.concurrency ?? 8 }, sweeper));
  agent.destroy();

  for (const route of options.routes) {
    const path = generator.build(route, {
      method: route.method,
      pathParams: { ...(route.params ?? {}) },
      query: [],
      headers: {},
    }).url;
    for (const [name, raw] of malformedFraming(route.method, path)) {
      const seen = await rawExchange(Number(base.port), raw).closed;
      const parsed = seen ? parseRawResponse(seen) : new Error('connection closed without an answer');
      record(
        {
          description: `${name}: ${JSON.stringify(raw.slice(0, 200))}`,
          mutation: `framing: ${name}`,
          reasons: [name],
        },
        parsed,
      );
      report.framing++;
    }
  }
  report.durationMs = Date.now() - started;
  return report;
}

/** Throws, naming the seed, when a storm had failures. */
export function assertStormClean(report: StormReport, shown = 15): void {
  if (report.failures.length === 0) return;
  const lines = report.failures
    .slice(0, shown)
    .map(
      (f) =>
        `- ${f.request}\n    must fail because: ${f.reasons.join(', ')}\n    but: ${f.problems.join('; ')}${
          f.status !== undefined ? `\n    answer: ${f.status} ${f.body}` : ''
        }`,
    );
  throw new Error(
    `hostile storm with seed ${report.seed} (replay: HOSTILE_SEED=${report.seed}): ` +
      `${report.failures.length} of ${report.sent + report.framing + report.integers.sent} requests were not refused in the dialect\n` +
      lines.join('\n'),
  );
}

// ---------------------------------------------------------------------------------------------------
// Raw sockets: malformed HTTP framing

/** Sends `raw` on a fresh connection; resolves with all it received once the server closes it. */
export function rawExchange(port: number, raw: string | string[], timeoutMs = 10_000) {
  const socket = createConnection({ port, host: '127.0.0.1' });
  let received = '';
  socket.on('data', (chunk) => (received += chunk));
  socket.on('error', () => undefined);
  const timer = setTimeout(() => socket.destroy(), timeoutMs);
  const closed = new Promise<string>((resolve) =>
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(received);
    }),
  );
  for (const part of [raw].flat()) socket.write(part);
  return { socket, closed };
}

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** The status, lower-case headers and body of a raw HTTP/1.1 answer (Content-Length framed). */
export function parseRawResponse(raw: string): RawResponse {
  const [head, ...rest] = raw.split('\r\n\r\n');
  const [statusLine, ...lines] = head.split('\r\n');
  return {
    status: Number(statusLine.split(' ')[1]),
    headers: Object.fromEntries(
      lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
    ),
    body: rest.join('\r\n\r\n'),
  };
}

/**
 * Requests Node's HTTP parser refuses before any route (smuggling-prone framing, broken chunking,
 * oversized or invalid headers), for `method path`: each must be a 4xx in the dialect.
 */
export function malformedFraming(method: string, path: string): [string, string][] {
  const line = `${method} ${path} HTTP/1.1\r\nHost: x\r\n`;
  const json = 'Content-Type: application/json\r\n';
  return [
    ['duplicate Content-Length', `${line}${json}Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}`],
    [
      'Content-Length with Transfer-Encoding',
      `${line}${json}Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
    ],
    ['bad chunk size', `${line}${json}Transfer-Encoding: chunked\r\n\r\nZZ\r\n{}\r\n0\r\n\r\n`],
    [
      'overflowing chunk size',
      `${line}${json}Transfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFFFF\r\n{}\r\n0\r\n\r\n`,
    ],
    ['negative Content-Length', `${line}${json}Content-Length: -1\r\n\r\n{}`],
    ['non-numeric Content-Length', `${line}${json}Content-Length: 1x\r\n\r\n{}`],
    ['headers over 16 KB', `${line}X-Big: ${'a'.repeat(17 * 1024)}\r\n\r\n`],
    ['space in a header name', `${line}Bad Header: 1\r\n\r\n`],
    ['control character in a header value', `${line}X-Ctl: a\u0001b\r\n\r\n`],
    ['space in the request target', `${method} ${path} x HTTP/1.1\r\nHost: x\r\n\r\n`],
    ['unknown HTTP version', `${method} ${path} HTTP/9.1\r\nHost: x\r\n\r\n`],
  ];
}

// ---------------------------------------------------------------------------------------------------
// Routes from an OpenAPI document

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

// ---------------------------------------------------------------------------------------------------
// Nothing stored

/** Rows of every table of the service's schema (its migration bookkeeping aside), by table name. */
export async function tableRowCounts<DB>(database: Database<DB>): Promise<Record<string, number>> {
  const db = database.db as unknown as {
    introspection: { getTables(): Promise<{ name: string; schema?: string }[]> };
    selectFrom(table: string): {
      select(f: (eb: { fn: { countAll(): { as(n: string): unknown } } }) => unknown[]): {
        executeTakeFirstOrThrow(): Promise<{ n: string | number | bigint }>;
      };
    };
  };
  const counts: Record<string, number> = {};
  for (const { name, schema } of await db.introspection.getTables()) {
    // The introspection lists every schema the connection can see; the service's is on its search_path.
    if (schema !== database.schema) continue;
    const row = await db
      .selectFrom(name)
      .select((eb) => [eb.fn.countAll().as('n')])
      .executeTakeFirstOrThrow();
    counts[name] = Number(row.n);
  }
  return counts;
}
