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

/** A service's error wire format: one per service, used by every error path of that service. */
export interface ErrorDialect {
  /** `$id` of the registered error body schema, for OpenAPI responses. */
  schemaRef: string;
  contentType: string;
  body(problem: Problem): unknown;
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

const SOCIAL_LOCATIONS: Record<ValidationLocation, string> = { body: 'json', querystring: 'query', params: 'path', headers: 'headers' };

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
};
