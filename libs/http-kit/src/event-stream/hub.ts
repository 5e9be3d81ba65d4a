import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** An event of a service's log as its streams send it: `id:`, `event:` and `data:` (JSON). */
export interface StreamEvent {
  readonly id: number;
  readonly kind: string;
  readonly data: unknown;
}

/** Where a hub replays from: the service's events repository (its own wire shapes). */
export interface StreamEventSource<E extends StreamEvent> {
  /** Up to `limit` events after `afterId`, in id order. */
  after(afterId: number, limit: number): Promise<E[]>;
  bounds(): Promise<{ oldest: number | null; newest: number | null }>;
}

export interface EventHubLimits {
  /** Open streams of this process beyond which a new one is refused (503). */
  maxStreams: number;
  /** Bytes a stream may have queued unsent (the client not reading) before it is dropped. */
  sendBufferBytes: number;
  /** A comment line on every stream this often, so proxies and clients see it alive. */
  heartbeatMs: number;
  /** The `retry:` hint (ms) sent when a stream opens: how long an EventSource waits to reconnect. */
  retryMs: number;
  /** Events kept framed in memory, from which a reconnecting stream replays without a query. */
  recentEvents: number;
  /** Events per read of a replay from the table. */
  replayBatch: number;
}

/** Why a stream got a `reset` event (its client should reload what it shows, then follow on). */
export type ResetReason = 'pruned' | 'unknown';

/** The `data` of a `reset` event. */
export interface ResetData {
  reason: ResetReason;
}

export interface Subscription<E extends StreamEvent> {
  /** The id the client last saw (`Last-Event-ID`): replayed from there; absent: live from now. */
  lastEventId?: number;
  /** Which events this stream sends (all when absent); `reset` is always sent. */
  filter?: (event: E) => boolean;
  /** Called once the stream is open (before its replay), with what ends it from outside. */
  onOpen?: (stream: OpenStream) => void;
}

/** An open stream, as the route that opened it may end it (its token has expired, say). */
export interface OpenStream {
  /**
   * Ends the stream with one last event, which has no `id:` (the client's last id stays the last
   * event it was sent, so it resumes from there). Nothing is sent after it.
   */
  endWith(kind: string, data: unknown): void;
  /** Resolves when the stream is gone (ended, dropped, or its client left). */
  readonly closed: Promise<void>;
}

interface Stream<E extends StreamEvent> {
  readonly res: ServerResponse;
  /** The last event id this stream is past (sent, or skipped by its filter). */
  position: number;
  readonly filter: ((event: E) => boolean) | undefined;
  /** Live events that arrived while the stream replays (null once it follows live). */
  pending: Framed<E>[] | null;
}

interface Framed<E> {
  event: E;
  frame: Buffer;
  /** The frame as one HTTP/1.1 chunk (size line, frame, CRLF), made once for the fan-out. */
  chunk?: Buffer;
}

const CRLF = Buffer.from('\r\n');

/** `framed`'s frame as one chunk of a chunked response (made on first use, then kept). */
function chunkOf(framed: Framed<unknown>): Buffer {
  return (framed.chunk ??= Buffer.concat([
    Buffer.from(`${framed.frame.length.toString(16)}\r\n`),
    framed.frame,
    CRLF,
  ]));
}

/**
 * The socket of a stream whose chunks the fan-out may write itself: a response whose head has gone
 * out, sent in chunks (HTTP/1.1), still open. Node's `res.write` would frame the same chunk again for
 * each stream and cork and uncork its socket once per write; the fan-out frames it once, corks each
 * socket for a slice of streams and writes the same bytes to every one.
 */
function directSocket(res: ServerResponse): Socket | undefined {
  const { socket } = res;
  if (!socket || socket.destroyed || res.writableEnded || !res.headersSent) return undefined;
  return (res as ServerResponse & { chunkedEncoding?: boolean }).chunkedEncoding === true
    ? socket
    : undefined;
}

const HEARTBEAT = Buffer.from(':\n\n');
/** Streams written to per turn of the event loop when an event fans out (see `fanOut`). */
const FAN_OUT_SLICE = 500;

/** One SSE message; `data` is one line (JSON never holds a raw line break). */
export function frameEvent(id: number, kind: string, data: unknown): Buffer {
  return Buffer.from(`id: ${id}\nevent: ${kind}\ndata: ${JSON.stringify(data)}\n\n`);
}

/**
 * The streams of one process over one event log: each event is framed once and the same bytes are
 * written to every stream it matches. A stream opened with a last event id first replays what came
 * after it (from the recent events kept in memory, else from the table in batches that wait for the
 * client to read), while the live events that arrive meanwhile wait in its pending list; then it
 * sends those it has not sent yet and follows live, so nothing is missed or sent twice. An id older
 * than the log keeps (pruned), or unknown to it, gets one `reset` event carrying the log's newest id.
 *
 * Bounded: at most `maxStreams` streams; a stream whose client leaves more than `sendBufferBytes`
 * unread is destroyed (its client reconnects with its last id and is replayed). `close()` ends every
 * stream with a `retry:` hint, so the clients of a replica going away move to the others.
 */
export class EventHub<E extends StreamEvent> {
  private readonly streams = new Set<Stream<E>>();
  private readonly recent: Framed<E>[] = [];
  /** The id before the first event of `recent`: it holds every event after this one. */
  private recentFrom = 0;
  /** The newest id published (or the log's position when the hub started). */
  private head = 0;
  private started = false;
  private closing = false;
  private heartbeat: NodeJS.Timeout | undefined;
  private sweepScheduled = false;
  /** Events published and not yet written to every stream (see `fanOut`). */
  private outbox: Framed<E>[] = [];
  private fanningOut = false;
  /** Streams destroyed because their client did not read (since start). */
  dropped = 0;

  constructor(
    private readonly source: StreamEventSource<E>,
    private readonly limits: EventHubLimits,
  ) {}

  /** Open streams (replaying or live). */
  get size(): number {
    return this.streams.size;
  }

  /** True when another stream may open. */
  get accepting(): boolean {
    return this.started && !this.closing && this.streams.size < this.limits.maxStreams;
  }

  get isStarted(): boolean {
    return this.started;
  }

  get isClosing(): boolean {
    return this.closing;
  }

  /** Starts at the log's `position` (the listener's first): later events come through `publish`. */
  start(position: number): void {
    if (this.started) return;
    this.started = true;
    this.head = this.recentFrom = position;
    this.heartbeat = setInterval(() => {
      this.sweep();
      for (const stream of this.streams) this.write(stream, HEARTBEAT);
    }, this.limits.heartbeatMs);
    this.heartbeat.unref();
  }

  /**
   * The smallest position of the open streams: no event after it may be pruned, one of them has
   * still to send it (undefined without streams).
   */
  floor(): number | undefined {
    let floor: number | undefined;
    for (const stream of this.streams)
      if (floor === undefined || stream.position < floor) floor = stream.position;
    return floor;
  }

  /** New events of the log, in id order (the listener's batches). */
  publish(events: readonly E[]): void {
    for (const event of events) {
      if (event.id <= this.head) continue;
      this.head = event.id;
      const framed = { event, frame: frameEvent(event.id, event.kind, event.data) };
      this.recent.push(framed);
      this.outbox.push(framed);
    }
    // Trimmed in halves, not one shift per event.
    if (this.recent.length >= 2 * this.limits.recentEvents) {
      const gone = this.recent.splice(0, this.recent.length - this.limits.recentEvents);
      this.recentFrom = gone[gone.length - 1].event.id;
    }
    this.fanOut();
  }

  /**
   * Writes the events waiting in the outbox to every stream, `FAN_OUT_SLICE` streams a turn of the
   * event loop: with 10,000 streams one event is 10,000 writes, and done at once they would hold
   * every request of the process back for tens of milliseconds. Each pass takes all the events
   * waiting when it starts, in order, to every stream open then; events published meanwhile wait for
   * the next pass, so a stream gets them in id order. A stream opened during a pass starts at the
   * head, past the pass's events (or replays them from `recent`).
   */
  private fanOut(): void {
    if (this.fanningOut || this.outbox.length === 0) return;
    this.fanningOut = true;
    const batch = this.outbox;
    this.outbox = [];
    const streams = [...this.streams];
    let next = 0;
    const slice = () => {
      const end = Math.min(next + FAN_OUT_SLICE, streams.length);
      const corked: Socket[] = [];
      for (; next < end; next++) {
        const stream = streams[next];
        if (!this.streams.has(stream)) continue;
        const socket = directSocket(stream.res);
        if (socket) {
          socket.cork();
          corked.push(socket);
        }
        for (const framed of batch) this.deliver(stream, framed, socket);
      }
      for (const socket of corked) socket.uncork();
      if (next < streams.length) {
        setImmediate(slice);
        return;
      }
      this.fanningOut = false;
      this.scheduleSweep();
      this.fanOut();
    };
    slice();
  }

  /**
   * Streams on `res` (headers not sent yet, the caller has taken the response over): headers, the
   * `retry:` hint, the replay, then live events until the client leaves or the hub closes.
   */
  async open(
    res: ServerResponse,
    headers: Record<string, string | string[] | number>,
    subscription: Subscription<E>,
  ) {
    res.writeHead(200, {
      ...headers,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-store, no-transform',
      'x-accel-buffering': 'no',
    });
    // No idle timer on a stream's socket: re-armed on every write, it costs more than the write, and
    // the heartbeat and the unread-bytes sweep already find the clients that are gone.
    res.socket?.setTimeout(0);
    const stream: Stream<E> = { res, position: this.head, filter: subscription.filter, pending: null };
    this.streams.add(stream);
    const closed = new Promise<void>((resolve) =>
      res.on('close', () => {
        this.streams.delete(stream);
        resolve();
      }),
    );
    res.write(`retry: ${this.limits.retryMs}\n\n`);
    subscription.onOpen?.({
      endWith: (kind, data) => {
        this.streams.delete(stream);
        if (!res.destroyed && !res.writableEnded)
          res.end(`event: ${kind}\ndata: ${JSON.stringify(data)}\n\n`);
      },
      closed,
    });
    const last = subscription.lastEventId;
    if (last === undefined || last === this.head) return;
    stream.pending = [];
    stream.position = last;
    try {
      await this.replay(stream);
    } catch (error) {
      res.destroy(error as Error);
    }
  }

  /** Ends every stream with a short, spread `retry:` hint, and refuses new ones; resolves once they are gone. */
  async close(retryMs: number, waitMs = 2000): Promise<void> {
    this.closing = true;
    clearInterval(this.heartbeat);
    const gone: Promise<void>[] = [];
    for (const stream of this.streams) {
      const { res } = stream;
      gone.push(new Promise((resolve) => (res.closed ? resolve() : res.once('close', () => resolve()))));
      // Spread over twice the hint, so the clients of a closing replica do not all come back at once.
      if (!res.destroyed) res.end(`retry: ${Math.round(retryMs * (0.5 + Math.random()))}\n\n`);
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(gone),
      new Promise((resolve) => {
        timer = setTimeout(resolve, waitMs);
        timer.unref();
      }),
    ]);
    clearTimeout(timer);
    for (const stream of this.streams) stream.res.destroy();
  }

  /** Sends `framed` to `stream` if it follows live and wants it (on `socket` when the fan-out may). */
  private deliver(stream: Stream<E>, framed: Framed<E>, socket?: Socket): void {
    const { event, frame } = framed;
    if (stream.pending) {
      stream.pending.push(framed);
      // A replay that cannot keep up with the live events: the client starts over from its last id.
      if (stream.pending.length > 4 * this.limits.replayBatch + this.limits.recentEvents) this.drop(stream);
      return;
    }
    if (event.id <= stream.position) return;
    stream.position = event.id;
    if (stream.filter && !stream.filter(event)) return;
    if (socket) socket.write(chunkOf(framed));
    else this.write(stream, frame);
  }

  private write(stream: Stream<E>, chunk: Buffer | string): void {
    const { res } = stream;
    if (res.destroyed || res.writableEnded) return;
    res.write(chunk);
  }

  /**
   * After a tick's writes, once the sockets have taken what their kernel buffers accept (Node corks a
   * response's writes for the tick it writes in): a stream with more than `sendBufferBytes` still
   * queued has a client that does not keep up, and is dropped.
   */
  private scheduleSweep(): void {
    if (this.sweepScheduled) return;
    this.sweepScheduled = true;
    setImmediate(() => {
      this.sweepScheduled = false;
      this.sweep();
    });
  }

  private sweep(): void {
    for (const stream of this.streams)
      if (stream.res.writableLength > this.limits.sendBufferBytes && !stream.pending) this.drop(stream);
  }

  private drop(stream: Stream<E>): void {
    this.dropped++;
    this.streams.delete(stream);
    stream.res.destroy();
  }

  /** Sends the events after the stream's position, then what arrived meanwhile; then it is live. */
  private async replay(stream: Stream<E>): Promise<void> {
    const { res } = stream;
    if (stream.position < this.recentFrom || stream.position > this.head) {
      const { oldest, newest } = await this.source.bounds();
      const pruned = oldest !== null && stream.position < oldest - 1;
      const unknown = stream.position > (newest ?? 0);
      if (pruned || unknown) {
        const data: ResetData = { reason: pruned ? 'pruned' : 'unknown' };
        stream.position = newest ?? 0;
        this.write(stream, frameEvent(stream.position, 'reset', data));
      }
    }
    for (;;) {
      if (res.destroyed || res.writableEnded) return;
      let batch: Framed<E>[];
      if (stream.position >= this.recentFrom && stream.position <= this.head) {
        batch = this.recentAfter(stream.position);
      } else {
        const events = await this.source.after(stream.position, this.limits.replayBatch);
        batch = events.map((event) => ({ event, frame: frameEvent(event.id, event.kind, event.data) }));
        if (!batch.length) break;
      }
      if (!batch.length) break;
      for (const { event, frame } of batch) {
        stream.position = event.id;
        if (!stream.filter || stream.filter(event)) this.write(stream, frame);
      }
      // Paced by the client: the next batch once this one is mostly read.
      if (res.writableLength >= this.limits.sendBufferBytes / 2 && !(await drained(res))) return;
    }
    const pending = stream.pending ?? [];
    stream.pending = null;
    for (const framed of pending) this.deliver(stream, framed);
  }

  /** Up to a batch of the recent events after `id` (which `recent` covers). */
  private recentAfter(id: number): Framed<E>[] {
    // Ids grow along `recent`: a binary search for the first one after `id`.
    let low = 0;
    let high = this.recent.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (this.recent[mid].event.id <= id) low = mid + 1;
      else high = mid;
    }
    return this.recent.slice(low, low + this.limits.replayBatch);
  }
}

/** Resolves true once `res` has flushed what it queued, false if it closes first. */
function drained(res: ServerResponse): Promise<boolean> {
  if (res.destroyed) return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      res.off('drain', onDrain);
      res.off('close', onClose);
      resolve(ok);
    };
    const onDrain = () => done(true);
    const onClose = () => done(false);
    res.once('drain', onDrain);
    res.once('close', onClose);
  });
}
