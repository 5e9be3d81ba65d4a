import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import { REPLICA_HEADER } from '../../src/haproxy';

/** A message the stream dispatched (a block with `data:`), as an EventSource hands it on. */
export interface StreamMessage {
  /** The event's id (`id:`), as the stream's last event id after it. */
  id: string;
  event: string;
  data: string;
  /** The connection it came on (index into `connections`). */
  connection: number;
}

/** One connection of the stream: who answered it, with which last event id it was asked, how it ended. */
export interface StreamConnection {
  status?: number;
  replica?: string;
  lastEventId: string;
  openedAt: number;
  closedAt?: number;
  /** `ended` (the server ended the response), `aborted` (cut mid-stream), `error` (no answer), `closed` (by us). */
  end?: 'ended' | 'aborted' | 'error' | 'closed';
}

/**
 * An EventSource as browsers implement it (the WHATWG parsing and reconnection rules), over
 * node:http from a local address of its own: on every (re)connection it sends `Last-Event-ID` with the
 * id of the last event it dispatched; it waits the server's `retry:` hint before reconnecting; a
 * block cut off by the end of a connection is never dispatched. Unlike a browser's, it also
 * reconnects after an answer other than 200 (a replica at its cap or shutting down answers 503), as
 * the microblog panel does.
 */
export class ReconnectingEventSource {
  readonly messages: StreamMessage[] = [];
  readonly connections: StreamConnection[] = [];
  /** The id of the last event dispatched: what the next connection sends as `Last-Event-ID`. */
  lastEventId = '';
  retryMs = 1000;
  private closed = false;
  private current: ClientRequest | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly url: string,
    readonly localAddress: string,
  ) {}

  open(): void {
    this.connect();
  }

  /** The replica of the connection open now (undefined between connections). */
  get replica(): string | undefined {
    const last = this.connections.at(-1);
    return last && last.status === 200 && !last.end ? last.replica : undefined;
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.current?.destroy();
  }

  private connect(): void {
    if (this.closed) return;
    const connection: StreamConnection = { lastEventId: this.lastEventId, openedAt: Date.now() };
    const index = this.connections.push(connection) - 1;
    let finished = false;
    const finish = (end: NonNullable<StreamConnection['end']>) => {
      if (finished) return;
      finished = true;
      connection.end = this.closed ? 'closed' : end;
      connection.closedAt = Date.now();
      this.current = undefined;
      if (!this.closed) this.timer = setTimeout(() => this.connect(), this.retryMs);
    };
    const headers: Record<string, string> = { accept: 'text/event-stream', 'cache-control': 'no-cache' };
    if (this.lastEventId) headers['last-event-id'] = this.lastEventId;
    const req = request(this.url, { agent: false, localAddress: this.localAddress, headers }, (res) => {
      connection.status = res.statusCode;
      const replica = res.headers[REPLICA_HEADER];
      connection.replica = typeof replica === 'string' ? replica : undefined;
      if (res.statusCode !== 200) {
        res.resume();
        res.on('end', () => finish('ended'));
        res.on('error', () => finish('aborted'));
        return;
      }
      this.read(res, index, finish);
    });
    this.current = req;
    req.on('error', () => finish(connection.status === undefined ? 'error' : 'aborted'));
    req.end();
  }

  /** The WHATWG event-stream parsing of one connection's body. */
  private read(res: IncomingMessage, connection: number, finish: (end: 'ended' | 'aborted') => void): void {
    let buffer = '';
    let data: string[] = [];
    let event = '';
    let id = this.lastEventId;
    const dispatch = () => {
      this.lastEventId = id;
      if (data.length)
        this.messages.push({ id, event: event || 'message', data: data.join('\n'), connection });
      data = [];
      event = '';
    };
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      buffer += chunk;
      let cut: number;
      while ((cut = buffer.search(/\r\n|\r|\n/)) >= 0) {
        const line = buffer.slice(0, cut);
        buffer = buffer.slice(cut + (buffer.startsWith('\r\n', cut) ? 2 : 1));
        if (line === '') {
          dispatch();
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'data') data.push(value);
        else if (field === 'event') event = value;
        else if (field === 'id' && !value.includes('\0')) id = value;
        else if (field === 'retry' && /^\d+$/.test(value)) this.retryMs = Number(value);
      }
    });
    // A block not ended by a blank line when the connection ends is discarded (never dispatched).
    res.on('end', () => finish('ended'));
    res.on('aborted', () => finish('aborted'));
    res.on('error', () => finish('aborted'));
    res.on('close', () => finish(res.complete ? 'ended' : 'aborted'));
  }
}
