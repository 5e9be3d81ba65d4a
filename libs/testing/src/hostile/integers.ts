/**
 * The integer sweep (issue #21): every integer parameter of every route, each sent every integer out
 * of range and every non-integer, not drawn at random: a value the route's schemas and rules let
 * through is a parameter without a declared range.
 */
import fc from 'fast-check';
import { HostileLeaf, isPlainObject, literal, numberText, setPath, type HostileValue } from './json';
import { safeDecode } from './oracle';
import {
  choiceDraws,
  routeSeed,
  type Generated,
  type HostileGenerator,
  type GeneratorOptions,
} from './requests';
import {
  buildRequest,
  choicesFrom,
  exampleDraft,
  fieldPaths,
  type HostileRequest,
  type HostileRoute,
  type JsonSchema,
} from './routes';
import { INT4_EDGES, inUrl, NOT_INTEGERS, OUT_OF_RANGE_INTEGERS } from './texts';

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
  ...[...INT4_EDGES, ...OUT_OF_RANGE_INTEGERS, ...NOT_INTEGERS].map(numberText),
  ...['2147483648', '-2147483649', '9223372036854775808', '99999999999999999999999', '1e+23'].map(literal),
];

/** One request of the integer sweep, or a value the route's schemas and rules would let through. */
export interface SweepItem {
  target: string;
  value: string;
  generated?: Generated & { request: HostileRequest };
}

/**
 * The integer sweep of one route: each integer parameter (`integerParameters`) set, with valid
 * credentials, to every value of the sweep. A value the schemas and rules refuse becomes a request
 * the service must refuse. A value they accept that is no exact JavaScript integer is reported
 * without a request (`generated` absent): the route declares no range for that parameter. One
 * within the exact integers (2^31, the int4 edges) they accept is not sent: a bigint may hold it.
 */
export function integerSweep(
  route: HostileRoute,
  generator: HostileGenerator,
  options: GeneratorOptions,
): SweepItem[] {
  const items: SweepItem[] = [];
  const targets = integerParameters(route);
  // Where an `Authenticate` puts a valid credential is drawn from the seed too, for each request.
  const runs = Math.max(1, targets.length * Math.max(SWEEP_TEXTS.length, SWEEP_JSON.length));
  const draws = fc.sample(choiceDraws, { seed: routeSeed(options.seed, route, ' integers'), numRuns: runs });
  let sent = 0;
  for (const target of targets) {
    const label = `${route.method} ${route.path} ${target.part}.${target.path.join('.')}`;
    const values = target.part === 'body' ? SWEEP_JSON : SWEEP_TEXTS.map((t) => ({ json: t, value: t }));
    for (const value of values) {
      const draft = exampleDraft(route);
      if (route.auth && options.authenticate)
        options.authenticate(draft, 'valid', choicesFrom(draws[sent++]), route);
      const name = target.path[0];
      if (target.part === 'params') draft.pathParams[name] = value.json;
      else if (target.part === 'query') {
        draft.query = draft.query.filter(([k]) => k !== name);
        draft.query.push([name, value.json]);
      } else if (isPlainObject(draft.body) || draft.body === undefined)
        draft.body = setPath(draft.body ?? {}, target.path, new HostileLeaf(value));
      else continue;
      const text = target.part === 'body' ? value.json : safeDecode(value.json);
      const reasons = generator.oracle.reasons(route, draft);
      if (reasons.length)
        items.push({
          target: label,
          value: text,
          generated: {
            route,
            draft,
            mutation: 'integer out of range',
            reasons,
            request: buildRequest(route, draft),
          },
        });
      else if (!Number.isSafeInteger(Number(typeof value.value === 'string' ? value.value : text)))
        items.push({ target: label, value: text });
    }
  }
  return items;
}
