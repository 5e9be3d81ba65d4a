/**
 * A route's hostile requests as one fast-check arbitrary: credentials (good, none, bad), a mutation,
 * harmless-looking noise, kept only when the oracle confirms the service must refuse the result
 * (so shrinking never wanders into a valid request). `HostileGenerator` reads each route's requests
 * from its seed in order: the n-th request of a route is fast-check's run n, replayable by path.
 */
import fc from 'fast-check';
import type { RequestRulesOptions } from '@platform/http-kit';
import { hostileJsonValue, isPlainObject } from './json';
import { mutationArbitrary, type Mutation, type MutationContext } from './mutations';
import { RequestOracle } from './oracle';
import {
  buildRequest,
  choicesFrom,
  cloneDraft,
  exampleDraft,
  JSON_TYPE,
  routeKey,
  type AuthKind,
  type Authenticate,
  type DraftRequest,
  type HostileRequest,
  type HostileRoute,
} from './routes';
import { HOSTILE_TEXTS, UNICODE_EDGE_STRINGS } from './texts';

/** What a service's requests are generated from. */
export interface GeneratorOptions {
  seed: number;
  /** The service's body limit, in bytes. */
  bodyLimit: number;
  /** The service's request rules (how it reads empty bodies, NUL, trimming). */
  requestRules: RequestRulesOptions;
  /** Sets credentials for routes with `auth`. */
  authenticate?: Authenticate;
}

/** A request the service must refuse: its draft, the mutation that makes it so, and every reason. */
export interface Generated {
  route: HostileRoute;
  draft: DraftRequest;
  mutation: string;
  reasons: string[];
}

/** Harmless-looking extras: unicode in other fields, unknown parameters, odd headers. */
type Noise =
  | { kind: 'body field'; n: number; text: string }
  | { kind: 'query parameter'; n: number; text: string }
  | { kind: 'header'; name: string; value: string }
  | { kind: 'cookie'; value: string }
  | { kind: 'content-type'; value: string };

const NOISE_HEADERS = ['accept', 'accept-language', 'x-request-id', 'x-forwarded-for', 'referer', 'origin'];
const NOISE_VALUES = [
  '*/*',
  'x'.repeat(200),
  '..',
  '127.0.0.1, ::1, garbage',
  'application/xml;q=0',
  'null',
  'é\u00ff',
];
const NOISE_COOKIES = ['refresh_token=%ZZ', 'a=b; ; ;=;', `refresh_token=${'x'.repeat(500)}`, 'x="\\"'];
const JSON_TYPES = ['application/json; charset=utf-8', 'APPLICATION/JSON', 'application/json;charset=UTF-8'];

const noise: fc.Arbitrary<Noise[]> = fc.array(
  fc.oneof(
    fc.record({
      kind: fc.constant('body field' as const),
      n: fc.nat(99),
      text: fc.constantFrom(...UNICODE_EDGE_STRINGS),
    }),
    fc.record({
      kind: fc.constant('query parameter' as const),
      n: fc.nat(99),
      text: fc.constantFrom(...HOSTILE_TEXTS),
    }),
    fc.record({
      kind: fc.constant('header' as const),
      name: fc.constantFrom(...NOISE_HEADERS),
      value: fc.constantFrom(...NOISE_VALUES),
    }),
    fc.record({ kind: fc.constant('cookie' as const), value: fc.constantFrom(...NOISE_COOKIES) }),
    fc.record({ kind: fc.constant('content-type' as const), value: fc.constantFrom(...JSON_TYPES) }),
  ),
  { maxLength: 2 },
);

/** Adds noise, never where it could replace what the mutation did (headers it set stay). */
function addNoise(draft: DraftRequest, items: Noise[]) {
  for (const item of items)
    switch (item.kind) {
      case 'body field':
        if (isPlainObject(draft.body) && !draft.rawBody) draft.body[`x_noise_${item.n}`] = item.text;
        break;
      case 'query parameter':
        draft.query.push([`x_noise_${item.n}`, item.text]);
        break;
      case 'header':
        draft.headers[item.name] ??= item.value;
        break;
      case 'cookie':
        draft.headers.cookie ??= item.value;
        break;
      case 'content-type':
        if (draft.headers['content-type'] === JSON_TYPE) draft.headers['content-type'] = item.value;
    }
}

/** Credentials as sent to a credentialed route: mostly good ones. */
const authKind = fc.constantFrom<AuthKind>('valid', 'valid', 'valid', 'valid', 'none', 'bad');
/** What an `Authenticate` picks with. */
export const choiceDraws = fc.array(fc.nat(0xffff), { minLength: 4, maxLength: 4 });

interface Drawn {
  auth: AuthKind;
  choices: number[];
  mutation: Mutation;
  noise: Noise[];
}

/** `"METHOD /path"` hashed (FNV-1a): each route draws from a seed of its own. */
function hashed(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}

/** The fast-check seed of a route's requests (or of its framing case `part`) in a storm of `seed`. */
export const routeSeed = (seed: number, route: HostileRoute, part = '') =>
  (seed ^ hashed(`${routeKey(route)}${part}`)) >>> 0;

/**
 * Requests are read from fast-check in chunks, each twice the one before: a chunk starts at its run
 * index (`path`), and reaching it costs a step of the random generator per run before it.
 */
const FIRST_CHUNK = 128;

/** Generates the storm's requests: each route's in order, deterministically from the seed. */
export class HostileGenerator {
  readonly oracle: RequestOracle;
  private readonly mutationContext: MutationContext;
  private readonly arbitraries = new Map<HostileRoute, fc.Arbitrary<Generated>>();
  private readonly streams = new Map<HostileRoute, { next: number; buffer: Generated[] }>();

  constructor(private readonly options: GeneratorOptions) {
    this.oracle = new RequestOracle(options.requestRules);
    // A text a bit over the body limit: on its own it makes any body too large.
    this.mutationContext = {
      values: hostileJsonValue(Math.min(options.bodyLimit + 1024, 2 * 1024 * 1024)),
      bodyLimit: options.bodyLimit,
    };
  }

  /** The route's requests: every value is one the service must refuse. */
  arbitrary(route: HostileRoute): fc.Arbitrary<Generated> {
    let arbitrary = this.arbitraries.get(route);
    if (!arbitrary) {
      const drawn = fc.record({
        auth: route.auth ? authKind : fc.constant<AuthKind>('valid'),
        choices: choiceDraws,
        mutation: mutationArbitrary(route, this.mutationContext),
        noise,
      });
      arbitrary = drawn.map((d) => this.generate(route, d)).filter((g): g is Generated => g !== undefined);
      this.arbitraries.set(route, arbitrary);
    }
    return arbitrary;
  }

  /** The seed fast-check generates `route`'s requests from. */
  seedOf(route: HostileRoute): number {
    return routeSeed(this.options.seed, route);
  }

  /** The route's next request, with its run index (fast-check's path to it) and its bytes (made when read). */
  next(route: HostileRoute): Generated & { index: number; readonly request: HostileRequest } {
    let stream = this.streams.get(route);
    if (!stream) this.streams.set(route, (stream = { next: 0, buffer: [] }));
    if (stream.buffer.length === 0) {
      const path = String(stream.next);
      const numRuns = Math.max(FIRST_CHUNK, stream.next);
      stream.buffer = fc.sample(this.arbitrary(route), { seed: this.seedOf(route), path, numRuns });
      stream.buffer.reverse();
    }
    const generated = stream.buffer.pop()!;
    return {
      ...generated,
      index: stream.next++,
      get request() {
        return buildRequest(route, generated.draft);
      },
    };
  }

  /** A request for `route` with what was drawn, or undefined when the service may accept it. */
  private generate(route: HostileRoute, drawn: Drawn): Generated | undefined {
    const draft = exampleDraft(route);
    if (route.auth && this.options.authenticate)
      this.options.authenticate(draft, drawn.auth, choicesFrom(drawn.choices), route);
    const own = drawn.mutation.apply(draft);
    if (own === undefined) return undefined;
    if (drawn.auth !== 'valid') own.push(`credentials: ${drawn.auth}`);
    // Noise on top, dropped when it undoes the mutation.
    const plain = cloneDraft(draft);
    addNoise(draft, drawn.noise);
    for (const candidate of [draft, plain]) {
      const reasons = [...own, ...this.oracle.reasons(route, candidate)];
      if (reasons.length) return { route, draft: candidate, mutation: drawn.mutation.name, reasons };
    }
    return undefined;
  }
}
