import { STATUS_CODES } from 'node:http';
import type { FieldError } from '@platform/schema';

export type ValidationLocation = 'body' | 'querystring' | 'params' | 'headers';

/** What went wrong, before any service's wire format is applied. */
export interface Problem {
  status: number;
  detail: string;
  /** Validation failures, with where they were found. */
  fields?: FieldError[];
  location?: ValidationLocation;
  /** True when the request's JSON could not be parsed (some dialects say so differently). */
  malformedBody?: boolean;
}

/** One Ajv validation error (Ajv runs with `allErrors` and `verbose`, so `data` is the failing value). */
export interface AjvError {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message?: string;
  parentSchema?: Record<string, unknown>;
  data?: unknown;
  schemaPath?: string;
}

/** A service's error wire format: one per service, used by every error path of that service. */
export interface ErrorDialect {
  /** `$id` of the registered error body schema, for OpenAPI responses. */
  schemaRef: string;
  contentType: string;
  body(problem: Problem): unknown;
  /** The dialect's own wording of schema failures (default: "<field> must be ..."). */
  describeValidation?(errors: AjvError[], location: ValidationLocation): FieldError[];
}

export const reasonPhrase = (status: number) => STATUS_CODES[status] ?? 'Error';

/** RFC 9457 problem details (microblog-api). */
export const problemDetailsDialect: ErrorDialect = {
  schemaRef: 'ProblemDetails',
  contentType: 'application/problem+json; charset=utf-8',
  body: (p) => ({
    type: 'about:blank',
    title: reasonPhrase(p.status),
    status: p.status,
    detail: p.detail,
    ...(p.fields ? { errors: p.fields } : {}),
  }),
};

/** Kasm Workspaces' `{"error_message"}` (workspace-api). */
export const kasmDialect: ErrorDialect = {
  schemaRef: 'KasmError',
  contentType: 'application/json; charset=utf-8',
  body: (p) => ({ error_message: p.detail }),
};

const SOCIAL_LOCATIONS: Record<ValidationLocation, string> = {
  body: 'json',
  querystring: 'query',
  params: 'path',
  headers: 'headers',
};

const MARSHMALLOW_TYPES: Record<string, string> = {
  string: 'Not a valid string.',
  integer: 'Not a valid integer.',
  number: 'Not a valid number.',
  boolean: 'Not a valid boolean.',
  array: 'Not a valid list.',
  object: 'Invalid input type.',
};
const MARSHMALLOW_FORMATS: Record<string, string> = {
  email: 'Not a valid email address.',
  'date-time': 'Not a valid datetime.',
  date: 'Not a valid date.',
  uri: 'Not a valid URL.',
};

/** marshmallow's wording of one schema failure, as the Flask backend's clients display it. */
function marshmallowMessage(e: AjvError): string {
  const s = e.parentSchema ?? {};
  const custom = typeof s['x-error-message'] === 'string' ? s['x-error-message'] : undefined;
  switch (e.keyword) {
    case 'required':
      return 'Missing data for required field.';
    case 'additionalProperties':
      return 'Unknown field.';
    case 'type':
      return e.data === null
        ? 'Field may not be null.'
        : (MARSHMALLOW_TYPES[String([e.params.type].flat()[0])] ?? 'Invalid value.');
    case 'minLength':
    case 'maxLength':
      if (custom) return custom;
      if (typeof s.minLength === 'number' && typeof s.maxLength === 'number')
        return `Length must be between ${s.minLength} and ${s.maxLength}.`;
      return e.keyword === 'minLength'
        ? `Shorter than minimum length ${String(e.params.limit)}.`
        : `Longer than maximum length ${String(e.params.limit)}.`;
    case 'format':
      return custom ?? MARSHMALLOW_FORMATS[String(e.params.format)] ?? 'Not a valid value.';
    case 'minimum':
    case 'maximum':
      if (custom) return custom;
      if (typeof s.minimum === 'number' && typeof s.maximum === 'number') {
        return `Must be greater than or equal to ${s.minimum} and less than or equal to ${s.maximum}.`;
      }
      return e.keyword === 'minimum'
        ? `Must be greater than or equal to ${String(e.params.limit)}.`
        : `Must be less than or equal to ${String(e.params.limit)}.`;
    case 'enum':
      return custom ?? `Must be one of: ${(e.params.allowedValues as unknown[]).join(', ')}.`;
    case 'pattern':
      return custom ?? 'String does not match expected pattern.';
    default:
      return custom ?? 'Invalid value.';
  }
}

/**
 * Schema failures worded as marshmallow/webargs word them: one list of messages per field, keyed by
 * the bare field name (`username`), `_schema` for the whole body or query string.
 */
export function describeMarshmallow(errors: AjvError[], _location: ValidationLocation): FieldError[] {
  const byField = new Map<string, AjvError[]>();
  for (const e of errors) {
    const segments = e.instancePath.split('/').slice(1);
    if (e.keyword === 'required') segments.push(String(e.params.missingProperty));
    if (e.keyword === 'additionalProperties') segments.push(String(e.params.additionalProperty));
    const field = segments.length ? segments.join('.') : '_schema';
    byField.set(field, [...(byField.get(field) ?? []), e]);
  }
  const out: FieldError[] = [];
  for (const [field, group] of byField) {
    // A union with its own message speaks for all of its branches' failures.
    const union = group.find(
      (e) =>
        (e.keyword === 'anyOf' || e.keyword === 'oneOf') &&
        typeof e.parentSchema?.['x-error-message'] === 'string',
    );
    // Rules in an `allOf` play marshmallow's `@validates` hooks: they speak only when the field's own rules passed.
    const own = group.filter((e) => !e.schemaPath?.includes('/allOf/'));
    const relevant = own.length ? own : group;
    const messages = union
      ? [String(union.parentSchema!['x-error-message'])]
      : relevant
          .filter((e) => e.keyword !== 'anyOf' && e.keyword !== 'oneOf' && e.keyword !== 'if')
          .map(marshmallowMessage);
    for (const message of new Set(messages)) out.push({ field, message });
  }
  return out;
}

/** The Flask microblog-api's `{code, message, description, errors?}` (social-api). */
export const socialDialect: ErrorDialect = {
  schemaRef: 'SocialError',
  contentType: 'application/json; charset=utf-8',
  body: (p) => {
    if (!p.fields) return { code: p.status, message: reasonPhrase(p.status), description: p.detail };
    const byField: Record<string, string[]> = {};
    for (const f of p.fields) (byField[f.field] ??= []).push(f.message);
    return {
      code: p.status,
      message: 'Validation Error',
      description: 'The server found one or more errors in the information that you sent.',
      errors: { [SOCIAL_LOCATIONS[p.location ?? 'body']]: byField },
    };
  },
  describeValidation: describeMarshmallow,
};
