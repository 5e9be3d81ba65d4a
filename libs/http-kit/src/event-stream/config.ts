import { Type, type Static, type TObject } from '@sinclair/typebox';

/** The defaults of a service's event stream settings (documented in its OpenAPI description). */
export const EVENT_STREAM_DEFAULTS = {
  /** Far below the server's connection cap (4096), which must leave room for ordinary requests. */
  maxStreams: 2000,
  /**
   * 128 KiB: a hundred events and more, above what a process writes at once in ordinary bursts; a
   * client that lets more pile up has stopped reading.
   */
  sendBufferBytes: 128 * 1024,
  heartbeatMs: 15_000,
  retryMs: 2000,
  keepSeconds: 24 * 60 * 60,
  keepMax: 1_000_000,
  pruneIntervalMs: 60_000,
  recentEvents: 1024,
} as const;

/**
 * The environment of a service's event stream, spread into its schema beside `serviceEnv`: a
 * service that streams reads these (config belongs to the service; the names are the same in each).
 */
export function eventStreamEnv() {
  const d = EVENT_STREAM_DEFAULTS;
  return {
    EVENTS_DATABASE_URL: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'PostgreSQL connection string of the one listening connection per process (LISTEN; never a pooler in transaction mode); unset: the service’s own database',
      }),
    ),
    EVENTS_MAX_STREAMS: Type.Integer({
      minimum: 1,
      default: d.maxStreams,
      description:
        'Open event streams per process; one more is answered 503 with Retry-After. Below MAX_CONNECTIONS',
    }),
    EVENTS_SEND_BUFFER_BYTES: Type.Integer({
      minimum: 1024,
      default: d.sendBufferBytes,
      description:
        'Unsent bytes a stream may queue (its client not reading) before it is dropped; the client resumes with its last id',
    }),
    EVENTS_HEARTBEAT_MS: Type.Integer({
      minimum: 10,
      // Below the server's idle connection timeout (60 s), which the heartbeat keeps away.
      maximum: 50_000,
      default: d.heartbeatMs,
      description: 'A comment line on every stream this often',
    }),
    EVENTS_RETRY_MS: Type.Integer({
      minimum: 10,
      default: d.retryMs,
      description: 'The `retry:` hint of a stream: how long a client waits before reconnecting',
    }),
    EVENTS_KEEP_SECONDS: Type.Integer({
      minimum: 1,
      default: d.keepSeconds,
      description: 'Events older than this are pruned (never one a connected stream has still to send)',
    }),
    EVENTS_KEEP_MAX: Type.Integer({
      minimum: 1,
      default: d.keepMax,
      description: 'At most this many events are kept (the oldest beyond it are pruned)',
    }),
    EVENTS_PRUNE_INTERVAL_MS: Type.Integer({
      minimum: 10,
      default: d.pruneIntervalMs,
      description: 'How often a process tries to prune (one replica at a time prunes)',
    }),
  };
}

type EventStreamEnv = Static<TObject<ReturnType<typeof eventStreamEnv>>>;

/** A service's event stream settings: what `eventStreamConfig` makes of `eventStreamEnv`. */
export type EventStreamConfig = ReturnType<typeof eventStreamConfig>;

/**
 * The settings of `eventStreamEnv`. Throws ("invalid configuration:") when the streams could take
 * every connection the server accepts (`maxConnections`, the service's MAX_CONNECTIONS).
 */
export function eventStreamConfig(e: EventStreamEnv, maxConnections: number) {
  if (e.EVENTS_MAX_STREAMS >= maxConnections)
    throw new Error(
      `invalid configuration:\n  EVENTS_MAX_STREAMS: must be below MAX_CONNECTIONS (${maxConnections}), so ordinary requests still find a connection`,
    );
  return {
    /** The listening connection's URL; undefined: the service's database. */
    databaseUrl: e.EVENTS_DATABASE_URL || undefined,
    maxStreams: e.EVENTS_MAX_STREAMS,
    sendBufferBytes: e.EVENTS_SEND_BUFFER_BYTES,
    heartbeatMs: e.EVENTS_HEARTBEAT_MS,
    retryMs: e.EVENTS_RETRY_MS,
    keepSeconds: e.EVENTS_KEEP_SECONDS,
    keepMax: e.EVENTS_KEEP_MAX,
    pruneIntervalMs: e.EVENTS_PRUNE_INTERVAL_MS,
  };
}

/** The settings as a sentence per setting, for a service's OpenAPI description. */
export function describeEventStreamSettings(): string {
  const d = EVENT_STREAM_DEFAULTS;
  return (
    `Settings (defaults): \`EVENTS_MAX_STREAMS\` open streams per process (${d.maxStreams}; one more is a 503 with ` +
    `\`Retry-After\`), \`EVENTS_HEARTBEAT_MS\` a comment line this often (${d.heartbeatMs}), \`EVENTS_RETRY_MS\` the ` +
    `\`retry:\` hint (${d.retryMs}), \`EVENTS_SEND_BUFFER_BYTES\` unread bytes before a stream is dropped ` +
    `(${d.sendBufferBytes}; the client resumes with its last id), \`EVENTS_KEEP_SECONDS\` (${d.keepSeconds}) and ` +
    `\`EVENTS_KEEP_MAX\` (${d.keepMax}) how long and how many events are kept for replay.`
  );
}
