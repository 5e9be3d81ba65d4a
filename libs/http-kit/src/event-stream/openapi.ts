import { Type, type TSchema } from '@sinclair/typebox';
import { SafeInteger, StringEnum } from '@platform/schema';
import type { ErrorDialect } from '../dialects';
import { errorResponses } from '../plugins/app/error-handling';
import type { ResetReason } from './hub';

const RESET_REASONS = ['pruned', 'unknown'] as const satisfies readonly ResetReason[];

/** The `data` of a `reset` event (the hub sends it, whatever the service). */
export const ResetEventData = Type.Object(
  {
    reason: StringEnum(RESET_REASONS, {
      description: '`pruned`: the id is older than the events kept; `unknown`: no such id in this log',
    }),
  },
  {
    description:
      'The last event id is older than the retained log or unknown: reload what you show, then follow on ' +
      '(this event’s `id:` is the log’s newest)',
  },
);

/** The optional `last_event_id` query parameter of a stream (for clients that cannot set `Last-Event-ID`). */
export const LastEventIdParameter = Type.Optional(
  SafeInteger({
    minimum: 0,
    description:
      'Replay every event after this id (as the `Last-Event-ID` header does; the header wins when both are sent)',
  }),
);

/**
 * A stream route's responses: 200 `text/event-stream` with each event's schema (`event:` name, the
 * JSON of its `data:` line; `reset` added), and 503 in the service's dialect (`Retry-After`) when
 * this process has its maximum of streams open or is shutting down.
 */
export function eventStreamResponses(
  dialect: ErrorDialect,
  options: {
    description: string;
    events: Record<string, TSchema>;
    /** Events the route itself sends with no `id:` line (not of the log: a stream's own last word). */
    unnumbered?: Record<string, TSchema>;
  },
) {
  const events = { ...options.events, reset: ResetEventData };
  const message = (kind: string, data: TSchema, numbered: boolean) =>
    Type.Object(
      {
        ...(numbered && {
          id: SafeInteger({ minimum: 0, description: 'The `id:` line: the event’s id in the log' }),
        }),
        event: Type.Literal(kind, { description: 'The `event:` line' }),
        data: {
          ...data,
          description: `The \`data:\` line (JSON). ${data.description ?? ''}`.trim(),
        } as TSchema,
      },
      { title: kind },
    );
  const messages = [
    ...Object.entries(events).map(([kind, data]) => message(kind, data, true)),
    ...Object.entries(options.unnumbered ?? {}).map(([kind, data]) => message(kind, data, false)),
  ];
  const unavailable = errorResponses(dialect, [503])[503] as object;
  return {
    200: {
      description: options.description,
      content: {
        'text/event-stream': {
          schema: Type.Union(messages, {
            description:
              'Server-Sent Events, one message per event (`id:`, `event:`, `data:` lines and a blank line); ' +
              'a `retry:` line when the stream opens and when the server closes it, comment lines (`:`) as heartbeat',
          }),
        },
      },
    },
    503: {
      ...unavailable,
      description:
        'Too many open streams on this instance, the stream not ready yet, or the instance shutting down',
      headers: {
        'Retry-After': { type: 'integer', minimum: 1, description: 'Seconds to wait before trying again' },
      },
    },
  };
}
