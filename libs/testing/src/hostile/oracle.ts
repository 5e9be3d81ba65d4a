/**
 * The oracle: does the service have to refuse this request? Reasons that depend on schemas are
 * confirmed with the same Ajv compiler and options the servers use, so a request the generator
 * believes invalid and the service accepts is reported (as a 2xx) instead of silently passing.
 */
import AjvCompiler from '@fastify/ajv-compiler';
import { annotationKeywords, TRIM } from '@platform/schema';
import { findNul, type RequestRulesOptions } from '@platform/http-kit';
import { isPlainObject, parsedValue } from './json';
import type { DraftRequest, HostileRoute, JsonSchema } from './routes';

type Validate = ((data: unknown) => boolean) & { errors?: unknown[] | null };

/**
 * Validators compiled as the services compile theirs (Fastify's Ajv compiler, all errors, no
 * removal; bodies not coerced, query strings and parameters coerced from text).
 */
class SchemaValidators {
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

/** A text as the server decodes it; undecodable text stays as sent. */
export function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** Query values as the server decodes them. */
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

/** Why a service with these request rules must refuse a request: its schemas, rules, request rules. */
export class RequestOracle {
  private readonly validators = new SchemaValidators();

  constructor(private readonly rules: RequestRulesOptions) {}

  /** Reasons the service must refuse `draft` (none: it may accept it). */
  reasons(route: HostileRoute, draft: DraftRequest): string[] {
    const reasons: string[] = [];
    const rules = this.rules;
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
    if (schema && !this.validators.validator(schema, mode)(data)) reasons.push(`${part} fails its schema`);
    // Ajv coerces `Infinity` and `1e309` to numbers and then checks no bound: the services refuse them.
    else if (mode === 'text' && hasNonFinite(data)) reasons.push(`${part} has a non-finite number`);
    if (rule && !this.validators.validator(rule, mode)(structuredClone(schema ? data : value)))
      reasons.push(`${part} breaks the handler's rules`);
    return reasons;
  }
}
