import createError from '@fastify/error';
import type { FieldError } from '@platform/schema';

export { createError };

/**
 * A 400 raised by a handler for a rule the schema cannot express; formatted like schema failures.
 * Another 4xx `statusCode` (e.g. 429) keeps that status and still carries the per-field messages, for
 * clients that show only field errors.
 */
export class RequestValidationError extends Error {
  readonly code = 'VALIDATION_FAILED';
  constructor(
    readonly fields: FieldError[],
    readonly location: 'body' | 'querystring' | 'params' | 'headers' = 'body',
    readonly statusCode: number = 400,
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

/** A new event stream while this process has its maximum open (`EVENTS_MAX_STREAMS`). */
export const EventStreamsFullError = createError(
  'PLATFORM_STREAMS_FULL',
  'This instance has its maximum of event streams open; try again in a few seconds',
  503,
);

/** A new event stream before the process's event listener has first read the log. */
export const EventStreamNotReadyError = createError(
  'PLATFORM_STREAMS_NOT_READY',
  'The event stream is not ready yet (the event log cannot be read); try again shortly',
  503,
);
