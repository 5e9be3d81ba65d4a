// A subscriber process of the stream benchmark: thousands of event streams on raw TCP sockets, each
// reading only the `id:` lines of the frames it receives, and the time each frame arrived. Forked by
// streams/subscribers.ts (compiled to JavaScript and run on bare Node, no TypeScript loader) and
// driven over IPC (advanced serialization: the delays come back as one Float64Array). An entry point
// only: never import it for its values (only its message types, which are erased).
import { connect, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import process from 'node:process';

/** What the bench asks (one request at a time, each answered by the reply of the same `type`). */
export type SubscriberRequest =
  | {
      type: 'open';
      host: string;
      port: number;
      path: string;
      /** Streams to open now, in addition to those open. */
      count: number;
      /** Connections being opened at once (the server's listen backlog is 511). */
      concurrency: number;
    }
  | {
      type: 'collect';
      /** Each event of a phase: its id, when the bench had its write's 201 and when it sent the write (monotonic ms). */
      events: [id: number, ackedAt: number, sentAt: number][];
    }
  | {
      type: 'progress';
      /** An event id: how many streams have received it (or a later one). */
      id: number;
    }
  | { type: 'close' };

export type SubscriberReply =
  | { type: 'open'; open: number; failed: number; statuses: Record<string, number> }
  | {
      type: 'collect';
      /** Receipt time − 201 time (ms) of every (stream, event) pair received. */
      delays: Float64Array;
      /** Receipt time − the time the write was sent (ms): the whole way, the write's own answer included. */
      sinceSent: Float64Array;
      /** Per event (the request's order): the earliest and latest receipt − 201 over this process's streams; NaN if none. */
      first: Float64Array;
      last: Float64Array;
      /** (stream, event) pairs not received. */
      missing: number;
      /** Streams that received every event of the request. */
      complete: number;
      /** Open streams, streams the server ended, and ids received again or out of order, since the start. */
      open: number;
      endedByServer: number;
      duplicates: number;
    }
  | { type: 'progress'; reached: number; streams: number }
  | { type: 'close' };

/** Monotonic milliseconds on the clock every process of the machine shares (CLOCK_MONOTONIC). */
const clockOffset = Number(process.hrtime.bigint()) / 1e6 - performance.now();
const now = () => performance.now() + clockOffset;

const ID_LINE = Buffer.from('\nid: ');
const ID_AT_START = Buffer.from('id: ');
const NEWLINE = 10;
const HEAD_END = Buffer.from('\r\n\r\n');
interface Stream {
  /** Its place in `streams`, and in each event's receipt times. */
  index: number;
  socket: Socket;
  /** The last id received. */
  lastId: number;
  /** The bytes after the last line break of what arrived (a line cut by a segment boundary). */
  partial: Buffer | null;
  closedByUs: boolean;
}

/** The open streams (and those the server ended since they opened), in the order they opened. */
let streams: Stream[] = [];
/** When each stream received each event: by event id, a time per stream index (0: not received). */
const arrivals = new Map<number, Float64Array>();
let endedByServer = 0;
let duplicates = 0;

function record(stream: Stream, id: number, at: number): void {
  if (id <= stream.lastId) {
    duplicates++;
    return;
  }
  stream.lastId = id;
  let times = arrivals.get(id);
  if (!times) {
    times = new Float64Array(streams.length);
    arrivals.set(id, times);
  }
  if (stream.index < times.length) times[stream.index] = at;
}

/**
 * The `id:` lines of the body bytes that arrived. The body is chunked (a chunk per frame: the hub
 * writes each frame in one write), and chunk-size lines never look like `id: `, so the body is
 * scanned as it comes, without decoding: only whole lines, the rest kept for the next segment.
 * `data:` lines are not parsed: the bench maps event ids to its writes from the events table.
 */
function onBody(stream: Stream, chunk: Buffer, at: number): void {
  const bytes = stream.partial ? Buffer.concat([stream.partial, chunk]) : chunk;
  const end = bytes.lastIndexOf(NEWLINE);
  stream.partial = end === bytes.length - 1 ? null : Buffer.from(bytes.subarray(end + 1));
  if (end < 0) return;
  // `bytes` starts at a line start: its first line, then every line after a line break.
  let i = bytes.indexOf(ID_AT_START) === 0 ? ID_AT_START.length : -1;
  if (i < 0) {
    const found = bytes.indexOf(ID_LINE);
    i = found < 0 ? -1 : found + ID_LINE.length;
  }
  while (i >= 0 && i < end) {
    let id = 0;
    for (let c = bytes[i]; c >= 48 && c <= 57; c = bytes[++i]) id = id * 10 + (c - 48);
    record(stream, id, at);
    const found = bytes.indexOf(ID_LINE, i);
    i = found < 0 ? -1 : found + ID_LINE.length;
  }
}

/** Opens one stream: resolves with the status of its response head (0: the connection failed). */
function openStream(host: string, port: number, path: string): Promise<number> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    let head = Buffer.alloc(0);
    let stream: Stream | undefined;
    let settled = false;
    const fail = (status: number) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      resolve(status);
    };
    const onHead = (chunk: Buffer) => {
      const at = now();
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf(HEAD_END);
      if (end < 0) return head.length > 64 * 1024 ? fail(0) : undefined;
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head.subarray(0, 16).toString('latin1'))?.[1] ?? 0);
      if (status !== 200) return fail(status);
      settled = true;
      const opened: Stream = { index: streams.length, socket, lastId: 0, partial: null, closedByUs: false };
      stream = opened;
      streams.push(opened);
      socket.off('data', onHead);
      socket.on('data', (more: Buffer) => onBody(opened, more, now()));
      if (head.length > end + 4) onBody(opened, head.subarray(end + 4), at);
      resolve(200);
    };
    socket.on('connect', () =>
      socket.write(`GET ${path} HTTP/1.1\r\nHost: ${host}:${port}\r\nAccept: text/event-stream\r\n\r\n`),
    );
    socket.on('data', onHead);
    socket.on('error', () => fail(0));
    socket.on('close', () => {
      if (!settled) return fail(0);
      if (stream && !stream.closedByUs) endedByServer++;
    });
  });
}

async function open(request: Extract<SubscriberRequest, { type: 'open' }>): Promise<SubscriberReply> {
  const statuses: Record<string, number> = {};
  let next = 0;
  let open = 0;
  const worker = async () => {
    while (next < request.count) {
      next++;
      const status = await openStream(request.host, request.port, request.path);
      statuses[status] = (statuses[status] ?? 0) + 1;
      if (status === 200) open++;
    }
  };
  await Promise.all(Array.from({ length: Math.min(request.concurrency, request.count) }, worker));
  return { type: 'open', open, failed: request.count - open, statuses };
}

function collect(request: Extract<SubscriberRequest, { type: 'collect' }>): SubscriberReply {
  const delays = new Float64Array(streams.length * request.events.length);
  const sinceSent = new Float64Array(delays.length);
  const first = new Float64Array(request.events.length).fill(NaN);
  const last = new Float64Array(request.events.length).fill(NaN);
  const got = new Uint32Array(streams.length);
  let n = 0;
  request.events.forEach(([id, ackedAt, sentAt], e) => {
    const times = arrivals.get(id);
    if (!times) return;
    let lo = Infinity;
    let hi = -Infinity;
    for (const stream of streams) {
      const at = times[stream.index];
      if (!at) continue;
      const delay = at - ackedAt;
      sinceSent[n] = at - sentAt;
      delays[n++] = delay;
      got[stream.index]++;
      if (delay < lo) lo = delay;
      if (delay > hi) hi = delay;
    }
    if (hi >= lo) {
      first[e] = lo;
      last[e] = hi;
    }
  });
  // This phase's events are done with; whatever arrived before it (a warm-up's) too.
  const newest = Math.max(0, ...request.events.map(([id]) => id));
  for (const id of arrivals.keys()) if (id <= newest) arrivals.delete(id);
  return {
    type: 'collect',
    delays: delays.slice(0, n),
    sinceSent: sinceSent.slice(0, n),
    first,
    last,
    missing: streams.length * request.events.length - n,
    complete: streams.filter((s) => got[s.index] === request.events.length).length,
    open: streams.filter((s) => !s.socket.destroyed).length,
    endedByServer,
    duplicates,
  };
}

async function close(): Promise<SubscriberReply> {
  const closing = streams.map((stream) => {
    stream.closedByUs = true;
    return new Promise<void>((resolve) => {
      if (stream.socket.destroyed) return resolve();
      stream.socket.once('close', () => resolve());
      stream.socket.destroy();
    });
  });
  await Promise.all(closing);
  streams = [];
  arrivals.clear();
  return { type: 'close' };
}

function progress(id: number): SubscriberReply {
  let reached = 0;
  for (const stream of streams) if (stream.lastId >= id) reached++;
  return { type: 'progress', reached, streams: streams.length };
}

process.on('message', (request: SubscriberRequest) => {
  const answer =
    request.type === 'open'
      ? open(request)
      : request.type === 'collect'
        ? collect(request)
        : request.type === 'progress'
          ? progress(request.id)
          : close();
  void Promise.resolve(answer).then((reply) => process.send!(reply));
});
// The bench ends this process (IPC closed): nothing to keep it alive then.
process.on('disconnect', () => process.exit(0));
