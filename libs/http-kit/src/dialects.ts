import { STATUS_CODES } from 'node:http';
import type { TSchema } from '@sinclair/typebox';
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

/**
 * A service's error wire format: one per service, declared by the service (its `errors.ts`) and used
 * by every error path of that service.
 */
export interface ErrorDialect {
  /** `$id` of the error body schema (one of `schemas`), for OpenAPI responses. */
  schemaRef: string;
  /** The `$id`'d schemas the error bodies need (the body's and those it `$ref`s); the platform registers them. */
  schemas: TSchema[];
  contentType: string;
  body(problem: Problem): unknown;
  /** The dialect's own wording of schema failures (default: `describeAjvErrors`, "<field> must be ..."). */
  describeValidation?(errors: AjvError[], location: ValidationLocation): FieldError[];
}

export const reasonPhrase = (status: number) => STATUS_CODES[status] ?? 'Error';
