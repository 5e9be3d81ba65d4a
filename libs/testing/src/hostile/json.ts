/**
 * Hostile JSON as fast-check arbitraries: values no schema field accepts in every form, body shapes
 * that are no object, text that is no JSON, prototype pollution.
 */
import fc from 'fast-check';
import { hostileText, notAnInteger, outOfRangeInteger } from './texts';

/**
 * A value for a JSON body: `json` is the text sent (it may be what `JSON.stringify` cannot write,
 * such as `1e309` or `-0`), `value` what the server's parser makes of it (deep values keep only their
 * type, which is all the schema check needs).
 */
export interface HostileValue {
  json: string;
  value: unknown;
}

/** A value written as `JSON.stringify` writes it. */
export const literal = (value: unknown): HostileValue => ({ json: JSON.stringify(value), value });
/** A value sent as the JSON text `json`, parsed by the server as `value`. */
export const raw = (json: string, value: unknown): HostileValue => ({ json, value });
/** A JSON number written as `text` (which may be beyond what a double holds). */
export const numberText = (text: string): HostileValue => raw(text, Number(text));

const DEEP = 10_000;
const deepArray = raw(`${'['.repeat(DEEP)}${']'.repeat(DEEP)}`, [[]]);
const deepObject = raw(`${'{"a":'.repeat(DEEP)}1${'}'.repeat(DEEP)}`, { a: {} });

/** Values no integer or text field takes: zero and its sign, doubles at the edges, non-finite. */
const EDGE_NUMBERS: readonly HostileValue[] = [
  literal(0),
  literal(-1),
  raw('-0', -0),
  literal(-0.5),
  literal(Number.MAX_VALUE),
  literal(5e-324),
  raw('1e400', Infinity),
  raw('123456789012345678901234567890', Number('123456789012345678901234567890')),
];

/** Containers in every awkward form: empty, nested 10,000 deep, big, with NUL and lone-surrogate keys. */
const SHAPES: readonly HostileValue[] = [
  literal([]),
  literal(['x']),
  literal([null]),
  literal(new Array(2000).fill(0)),
  deepArray,
  literal({}),
  literal({ a: 1 }),
  deepObject,
  raw('{"k\\u0000":1}', { 'k\u0000': 1 }),
  raw('{"\\ud800":1}', { '\ud800': 1 }),
];

/**
 * JSON values no schema field accepts in every form: hostile texts (and one a bit over `huge`
 * characters), integers out of range as numbers and as texts, non-integers, edge and arbitrary
 * doubles, booleans, null, containers of every awkward shape and small ones of hostile texts.
 */
export function hostileJsonValue(huge: number): fc.Arbitrary<HostileValue> {
  // One text shared by every request that sends it: it is built when the body is.
  const hugeText = literal('h'.repeat(huge));
  // About one value in a hundred is the huge text: the storm's budget for oversized bodies is soon spent.
  return fc.oneof(
    { arbitrary: hostileText.map(literal), weight: 30 },
    { arbitrary: fc.constant(hugeText), weight: 1 },
    { arbitrary: outOfRangeInteger.map(numberText), weight: 12 },
    { arbitrary: outOfRangeInteger.map(literal), weight: 9 },
    { arbitrary: notAnInteger.map(numberText), weight: 6 },
    { arbitrary: fc.constantFrom(...EDGE_NUMBERS), weight: 6 },
    { arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }).map(literal), weight: 3 },
    { arbitrary: fc.constantFrom(literal(true), literal(false), literal(null)), weight: 6 },
    { arbitrary: fc.constantFrom(...SHAPES), weight: 9 },
    { arbitrary: fc.array(hostileText, { maxLength: 3 }).map(literal), weight: 3 },
    {
      arbitrary: fc.dictionary(hostileText, hostileText, { maxKeys: 3 }).map(literal),
      weight: 3,
    },
  );
}

/** Body shapes that are no object (or none at all). */
export const BODY_SHAPES = [
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
] as const;
export type BodyShape = (typeof BODY_SHAPES)[number];

/** The body a shape stands for, given the example body. */
export function shapedBody(shape: BodyShape, example: unknown): unknown {
  if (shape === 'none') return undefined;
  if (shape === 'array of the example') return [example];
  if (shape === 'deep array') return new HostileLeaf(deepArray);
  if (shape === 'deep object') return new HostileLeaf(deepObject);
  return JSON.parse(shape);
}

/** Texts that are no JSON, each in a way some lenient parser accepts. */
export const MALFORMED_JSON: readonly string[] = [
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

/** How a JSON text is broken: a malformed text of its own or the body's, cut short, with junk after. */
export interface Breakage {
  text?: string;
  cut?: number;
  tail: string;
}
export const breakage: fc.Arbitrary<Breakage> = fc.record({
  text: fc.option(fc.constantFrom(...MALFORMED_JSON), { nil: undefined }),
  cut: fc.option(fc.nat(), { nil: undefined }),
  tail: fc.constantFrom('', '}', ',', ' x', ']'),
});

/** `body` (JSON text) broken as `how` says: undefined when that still parses. */
export function brokenJson(body: string, how: Breakage): string | undefined {
  const text = how.text ?? body;
  const cut =
    how.cut !== undefined && text.length > 1 ? text.slice(0, 1 + (how.cut % (text.length - 1))) : text;
  const broken = `${cut}${how.tail}`;
  try {
    JSON.parse(broken);
    return undefined;
  } catch {
    return broken;
  }
}

/** Bodies that try to reach `Object.prototype` through the parser. */
export const PROTO_BODIES: readonly string[] = [
  '{"__proto__":{"polluted":true}}',
  '{"constructor":{"prototype":{"polluted":true}}}',
  '{"a":{"__proto__":{"polluted":true}}}',
  '[{"__proto__":{"isAdmin":true}}]',
];

/** A HostileValue placed in a draft body. */
export class HostileLeaf {
  constructor(readonly hostile: HostileValue) {}
}

export const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof HostileLeaf);

/** What the server's JSON parser makes of a draft body. */
export function parsedValue(body: unknown): unknown {
  if (body instanceof HostileLeaf) {
    const { value } = body.hostile;
    return typeof value === 'object' && value !== null ? structuredClone(value) : value;
  }
  if (Array.isArray(body)) return body.map(parsedValue);
  if (isPlainObject(body))
    return Object.fromEntries(Object.entries(body).map(([k, v]) => [k, parsedValue(v)]));
  return body;
}

/** The JSON text of a draft body, hostile leaves written as their raw JSON. */
export function serializeBody(body: unknown): string {
  if (body instanceof HostileLeaf) return body.hostile.json;
  if (Array.isArray(body)) return `[${body.map(serializeBody).join(',')}]`;
  if (isPlainObject(body))
    return `{${Object.entries(body)
      .map(([k, v]) => `${JSON.stringify(k)}:${serializeBody(v)}`)
      .join(',')}}`;
  return JSON.stringify(body) ?? 'null';
}

/** A copy of a draft body (hostile leaves are shared: nothing changes them). */
export function cloneBody(body: unknown): unknown {
  if (body instanceof HostileLeaf) return body;
  if (Array.isArray(body)) return body.map(cloneBody);
  if (isPlainObject(body)) return Object.fromEntries(Object.entries(body).map(([k, v]) => [k, cloneBody(v)]));
  return body;
}

/** Sets the field at `path` (objects made on the way); a body that is no object becomes one. */
export function setPath(body: unknown, path: string[], value: unknown): unknown {
  const root = isPlainObject(body) ? body : {};
  let node: Record<string, unknown> = root;
  for (const key of path.slice(0, -1)) {
    if (!isPlainObject(node[key])) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[path[path.length - 1]] = value;
  return root;
}

/** Deletes the field at `path`: false when there is none. */
export function deletePath(body: unknown, path: string[]): boolean {
  let node = body;
  for (const key of path.slice(0, -1)) {
    if (!isPlainObject(node)) return false;
    node = node[key];
  }
  if (!isPlainObject(node) || !(path[path.length - 1] in node)) return false;
  delete node[path[path.length - 1]];
  return true;
}
