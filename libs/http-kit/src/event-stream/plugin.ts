import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { EventLogListener, type PruneRequest, type PruneResult } from '@platform/db';
import { EventStreamNotReadyError, EventStreamsFullError, ShuttingDownError } from '../errors';
import { EventHub, type StreamEvent, type StreamEventSource, type Subscription } from './hub';
import { EVENT_STREAM_DEFAULTS, type EventStreamConfig } from './config';

/** The service's event log as the stream reads and prunes it (its events repository). */
export interface EventStreamLog<E extends StreamEvent> extends StreamEventSource<E> {
  prune(request: PruneRequest): Promise<PruneResult>;
}

export interface EventStreamOptions<E extends StreamEvent> {
  /** The listening connection's URL (the service's `EVENTS_DATABASE_URL`, else its database's). */
  url: string;
  /** The channel the log notifies (`eventChannel(schema)` of @platform/db). */
  channel: string;
  log: EventStreamLog<E>;
  settings: EventStreamConfig;
  /** How long a stream request waits for the listener's first read before a 503 (default 5 s). */
  readyTimeoutMs?: number;
}

/**
 * What a stream route asks for: the filter of its subscribers, where the replay starts when the
 * client sends no last id (default: live from now), and a hook given the open stream.
 */
export type StreamRequest<E extends StreamEvent> = Pick<Subscription<E>, 'filter' | 'onOpen'> & {
  /** Without a client's last id, replay from this one (a position the route read its state at). */
  from?: number;
};

/** `app.eventStream`: the process's event stream (one listener, one hub). */
export interface EventStream<E extends StreamEvent = StreamEvent> {
  readonly hub: EventHub<E>;
  readonly listener: EventLogListener<E>;
  /**
   * Answers a stream route: 503 (the dialect's) when the process has its maximum of streams open, is
   * closing, or cannot read the log yet; else takes the reply over and streams, replaying from
   * `Last-Event-ID` (or the `last_event_id` query parameter) when the client sends one.
   */
  serve<T extends E = E>(
    request: FastifyRequest,
    reply: FastifyReply,
    options?: StreamRequest<T>,
  ): Promise<void>;
  /** One prune now (the timer's work): null when another process was pruning. */
  prune(): Promise<PruneResult>;
}

declare module 'fastify' {
  interface FastifyInstance {
    eventStream: EventStream;
  }
}

const LAST_EVENT_ID = /^\d{1,15}$/;

/**
 * The client's last event id: the `Last-Event-ID` header (what an EventSource sends when it
 * reconnects), else the `last_event_id` query parameter. A header that is no id is unknown to the
 * log, which answers it with a `reset`.
 */
function lastEventIdOf(request: FastifyRequest): number | undefined {
  const header = request.headers['last-event-id'];
  if (typeof header === 'string' && header.trim() !== '')
    return LAST_EVENT_ID.test(header.trim()) ? Number(header.trim()) : Number.POSITIVE_INFINITY;
  const query = (request.query as { last_event_id?: unknown } | undefined)?.last_event_id;
  return typeof query === 'number' ? query : undefined;
}

function within(promise: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise.then(() => true),
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms))),
  ]).finally(() => clearTimeout(timer));
}

/**
 * A service's live event stream over its event log (`EVENT_LOG_V1` of @platform/db): one dedicated
 * listening connection per process (`EventLogListener`), the streams of the process (`EventHub`), the
 * pruner (one replica at a time) and the shutdown (streams end with a `retry:` hint when the app
 * closes, before the server stops). The service declares its route(s) and answers them with
 * `app.eventStream.serve(request, reply, { filter })`.
 */
export const eventStreamPlugin = fp(
  async function eventStream(app: FastifyInstance, options: EventStreamOptions<StreamEvent>) {
    const { settings, log } = options;
    const readyTimeoutMs = options.readyTimeoutMs ?? 5000;
    const hub = new EventHub(log, {
      maxStreams: settings.maxStreams,
      sendBufferBytes: settings.sendBufferBytes,
      heartbeatMs: settings.heartbeatMs,
      retryMs: settings.retryMs,
      recentEvents: EVENT_STREAM_DEFAULTS.recentEvents,
      replayBatch: 500,
    });
    const listener = new EventLogListener({
      url: options.url,
      channel: options.channel,
      reader: log,
      deliver: (events) => hub.publish(events),
      log: app.log.child({ component: 'event-listener' }),
    });
    void listener.ready.then(() => hub.start(listener.position ?? 0));

    let pruning: Promise<PruneResult> | undefined;
    const prune = () =>
      (pruning ??= (async () => {
        // Nothing a stream or the listener has still to send.
        const floors = [hub.floor(), listener.position].filter((n): n is number => n !== undefined);
        try {
          return await log.prune({
            keepSeconds: settings.keepSeconds,
            keepMax: settings.keepMax,
            floor: floors.length ? Math.min(...floors) : undefined,
          });
        } finally {
          pruning = undefined;
        }
      })());
    const pruneTimer = setInterval(() => {
      prune().catch((err: unknown) => app.log.warn({ err }, 'pruning the event log failed'));
    }, settings.pruneIntervalMs);
    pruneTimer.unref();

    // Ready once the listener has read where the log is (so the app's first requests find the stream
    // ready), or after the wait when the database is away (it goes on trying in the background).
    app.addHook('onReady', async () => {
      listener.start();
      await within(listener.ready, Math.min(readyTimeoutMs, 2000));
    });
    // Before the server stops: the streams are what would hold it open, and their clients should
    // reconnect elsewhere now.
    app.addHook('preClose', async () => {
      clearInterval(pruneTimer);
      await hub.close(settings.retryMs);
    });
    app.addHook('onClose', async () => {
      await pruning?.catch(() => undefined);
      await listener.close();
    });

    const stream: EventStream = {
      hub,
      listener,
      prune,
      async serve(request, reply, subscription = {}) {
        if (!hub.isStarted && !(await within(listener.ready, readyTimeoutMs)))
          throw new EventStreamNotReadyError();
        if (hub.isClosing) throw new ShuttingDownError();
        if (!hub.accepting) throw new EventStreamsFullError();
        const lastEventId = lastEventIdOf(request) ?? subscription.from;
        reply.hijack();
        // The headers the platform's hooks set (security headers, CORS) and the request id (an
        // onSend hook, which a response taken over skips).
        const headers = { ...reply.getHeaders(), 'x-request-id': request.id } as Record<string, string>;
        if (request.method === 'HEAD') {
          reply.raw.writeHead(200, { ...headers, 'content-type': 'text/event-stream; charset=utf-8' });
          reply.raw.end();
          return;
        }
        // The route's own events: its filter sees what its log's reader makes.
        const filter = subscription.filter as ((event: StreamEvent) => boolean) | undefined;
        await hub.open(reply.raw, headers, { lastEventId, filter, onOpen: subscription.onOpen });
      },
    };
    app.decorate('eventStream', stream);
  },
  { name: '@platform/event-stream', fastify: '5.x', dependencies: ['@platform/error-handling'] },
);
