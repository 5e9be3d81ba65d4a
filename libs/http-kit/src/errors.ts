import createError from '@fastify/error';
import type { FieldError } from '@platform/schema';

export { createError };

/** A 400 raised by a handler for a rule the schema cannot express; formatted like schema failures. */
export class RequestValidationError extends Error {
  readonly statusCode = 400;
  readonly code = 'VALIDATION_FAILED';
  constructor(
    readonly fields: FieldError[],
    readonly location: 'body' | 'querystring' | 'params' | 'headers' = 'body',
  ) {
    super(fields.map((f) => f.message).join('; '));
    this.name = 'RequestValidationError';
  }
}

/** Thrown by readiness checks and data access when the database cannot be reached. */
export const ServiceUnavailableError = createError(
  'PLATFORM_UNAVAILABLE',
  'The database is unavailable; try again shortly',
  503,
);

/** Readiness while the service drains after SIGTERM: it still serves, but takes no new traffic. */
export const ShuttingDownError = createError(
  'PLATFORM_SHUTTING_DOWN',
  'The service is shutting down; send new requests to another instance',
  503,
);
