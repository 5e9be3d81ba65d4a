/**
 * The ways a request is made invalid, as fast-check arbitraries: each draws what it needs (a method,
 * a field and a hostile value, a length) and edits a draft of the route's valid example. Which ones a
 * route gets, and how often, depends on what it has to attack: a body, a query string, parameters.
 */
import fc from 'fast-check';
import { MAX_PARAM_LENGTH } from '@platform/http-kit';
import {
  BODY_SHAPES,
  breakage,
  brokenJson,
  deletePath,
  HostileLeaf,
  isPlainObject,
  PROTO_BODIES,
  serializeBody,
  setPath,
  shapedBody,
  type HostileValue,
} from './json';
import { fieldPaths, queryNames, type DraftRequest, type HostileRoute } from './routes';
import { badPercentEncoding, hostileText, hostileUrlText } from './texts';

/**
 * One drawn mutation: its name, what was drawn, and the edit. The edit answers the reasons it makes
 * the request invalid by itself (empty: the schema check decides), or undefined when it does not
 * apply to this draft.
 */
export interface Mutation {
  name: string;
  drawn: unknown;
  apply(draft: DraftRequest): string[] | undefined;
}

const mutation = <T>(
  name: string,
  weight: number,
  arbitrary: fc.Arbitrary<T>,
  apply: (draft: DraftRequest, drawn: T) => string[] | undefined,
) => ({
  weight,
  arbitrary: arbitrary.map((drawn): Mutation => ({ name, drawn, apply: (draft) => apply(draft, drawn) })),
});

const WRONG_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'PROPFIND', 'MKCOL', 'PURGE', 'TRACE'];
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
const EXTRA_FIELDS = [
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
];
/** Over Node's 16 KB header limit: a 431 before any route. */
const OVER_HEADER_LIMIT = fc.integer({ min: 17 * 1024, max: 18 * 1024 });

/** What the mutations of a route draw their values from. */
export interface MutationContext {
  /** Hostile JSON values for body fields. */
  values: fc.Arbitrary<HostileValue>;
  /** The service's body limit, in bytes. */
  bodyLimit: number;
}

/** The mutations that apply to `route`, weighted, as one arbitrary. */
export function mutationArbitrary(route: HostileRoute, context: MutationContext): fc.Arbitrary<Mutation> {
  const taken = new Set([route.method, ...(route.otherMethods ?? []), 'HEAD', 'OPTIONS']);
  const weighted: fc.WeightedArbitrary<Mutation>[] = [
    mutation(
      'wrong method',
      1,
      fc.constantFrom(...WRONG_METHODS.filter((m) => !taken.has(m))),
      (d, method) => {
        d.method = method;
        return ['wrong method'];
      },
    ),
    mutation(
      'bad percent-encoding in the path',
      2,
      fc.tuple(badPercentEncoding, fc.constantFrom('', 'x', '/', '/..')),
      (d, [bits, tail]) => {
        d.pathSuffix = bits + tail;
        return ['bad percent-encoding in the path'];
      },
    ),
    mutation('long url', 1, fc.tuple(fc.boolean(), OVER_HEADER_LIMIT), (d, [inPath, length]) => {
      if (inPath) d.pathSuffix = `/${'u'.repeat(length)}`;
      else d.query.push(['x_long', 'q'.repeat(length)]);
      return ['url over the header limit'];
    }),
    mutation(
      'oversized header',
      1,
      fc.tuple(fc.constantFrom('x-hostile', 'cookie', 'accept', 'user-agent'), OVER_HEADER_LIMIT),
      (d, [name, length]) => {
        d.headers[name] = 'h'.repeat(length);
        return ['headers over the limit'];
      },
    ),
  ];

  const params = Object.keys(route.params ?? {});
  if (params.length)
    weighted.push(
      mutation(
        'hostile path parameter',
        5,
        fc.tuple(
          fc.constantFrom(...params),
          hostileUrlText.filter((text) => text !== ''),
        ),
        (d, [name, text]) => {
          d.pathParams[name] = text;
          return [];
        },
      ),
      mutation(
        'long path parameter',
        1,
        fc.tuple(
          fc.constantFrom(...params),
          fc.integer({ min: MAX_PARAM_LENGTH + 1, max: MAX_PARAM_LENGTH + 2000 }),
        ),
        (d, [name, length]) => {
          d.pathParams[name] = 'p'.repeat(length);
          return ['path parameter over the length limit'];
        },
      ),
    );

  const query = queryNames(route);
  if (query.length)
    weighted.push(
      mutation(
        'hostile query value',
        8,
        fc.tuple(fc.constantFrom(...query), hostileUrlText),
        (d, [name, text]) => {
          d.query = d.query.filter(([k]) => k !== name);
          d.query.push([name, text]);
          return [];
        },
      ),
      mutation(
        'repeated query parameter',
        2,
        fc.tuple(fc.constantFrom(...query), hostileUrlText),
        (d, [name, text]) => {
          const current = d.query.find(([k]) => k === name)?.[1] ?? '1';
          d.query.push([name, current], [name, text]);
          return [];
        },
      ),
    );

  if (route.schemas?.body !== undefined || route.body !== undefined)
    weighted.push(...bodyMutations(route, context));
  return fc.oneof(...weighted);
}

function bodyMutations(route: HostileRoute, { values, bodyLimit }: MutationContext) {
  const paths = fieldPaths([route.schemas?.body, route.rules?.body], route.body);
  const field = paths.length ? fc.constantFrom(...paths) : undefined;
  const weighted: fc.WeightedArbitrary<Mutation>[] = [];
  if (field)
    weighted.push(
      mutation('hostile field value', 14, fc.tuple(field, values), (d, [path, value]) => {
        if (!isPlainObject(d.body)) return undefined;
        d.body = setPath(d.body, path, new HostileLeaf(value));
        return [];
      }),
      mutation('missing field', 4, field, (d, path) => (deletePath(d.body, path) ? [] : undefined)),
    );
  weighted.push(
    mutation(
      'extra field',
      2,
      fc.tuple(fc.oneof(fc.constantFrom(...EXTRA_FIELDS), hostileText), values),
      (d, [key, value]) => {
        if (!isPlainObject(d.body)) return undefined;
        d.body[key] = new HostileLeaf(value);
        return [];
      },
    ),
    mutation(
      'hostile body shape',
      3,
      fc.tuple(fc.constantFrom(...BODY_SHAPES), fc.boolean()),
      (d, [shape, bare]) => {
        d.body = shapedBody(shape, d.body);
        if (d.body === undefined && bare) delete d.headers['content-type'];
        return [];
      },
    ),
    mutation('malformed JSON', 3, breakage, (d, how) => {
      const broken = brokenJson(serializeBody(d.body), how);
      if (broken === undefined) return undefined; // still JSON: not this mutation
      d.rawBody = Buffer.from(broken);
      return ['malformed JSON'];
    }),
    mutation('prototype pollution', 1, fc.constantFrom(...PROTO_BODIES), (d, text) => {
      d.rawBody = Buffer.from(text);
      return ['prototype pollution'];
    }),
    mutation('not JSON', 2, fc.tuple(fc.constantFrom(...NOT_JSON_TYPES), fc.boolean()), (d, [type, form]) => {
      d.headers['content-type'] = type;
      d.rawBody = Buffer.from(form ? 'name=x&a=%ZZ' : serializeBody(d.body ?? {}));
      return ['not JSON'];
    }),
    mutation('oversized body', 1, fc.nat(1023), (d, extra) => {
      d.filler = bodyLimit + 1 + extra;
      return ['body over the limit'];
    }),
  );
  return weighted;
}
