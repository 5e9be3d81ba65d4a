import { request, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { proveStreamMessage } from './documents/proof';

/** One parsed block of a `text/event-stream` (a message, a `retry:` hint or a comment). */
export interface SseBlock {
  id?: string;
  event?: string;
  data?: string;
  retry?: number;
  comment?: string;
}

/** A message of a stream: a block with `data:` (what EventSource dispatches). */
export type SseMessage = SseBlock & { data: string };

/**
 * A Server-Sent Events stream read over real HTTP (a connection of its own), its blocks parsed as
 * they arrive, for tests of stream routes.
 */
export class EventStreamClient {
  readonly blocks: SseBlock[] = [];
  /** The blocks that carry data (events), in order. */
  readonly messages: SseMessage[] = [];
  /** The bytes received, as text. */
  text = '';
  /** Resolves when the server ends the stream or the connection closes. */
  readonly ended: Promise<void>;
  private buffer = '';
  private waiters: (() => void)[] = [];
  private done = false;

  constructor(
    readonly status: number,
    readonly headers: IncomingHttpHeaders,
    readonly response: IncomingMessage,
    /** Where it was opened: each message is proven against that stream's documented messages. */
    readonly url?: string,
  ) {
    response.setEncoding('utf8');
    const stream = status === 200 && String(headers['content-type']).startsWith('text/event-stream');
    const proven = stream ? url : undefined;
    this.ended = new Promise((resolve) => {
      const end = () => {
        this.done = true;
        this.wake();
        resolve();
      };
      response.on('end', end);
      response.on('close', end);
      response.on('error', end);
    });
    response.on('data', (chunk: string) => {
      this.text += chunk;
      this.buffer += chunk;
      let cut: number;
      while ((cut = this.buffer.indexOf('\n\n')) >= 0) {
        const block = parseBlock(this.buffer.slice(0, cut));
        this.blocks.push(block);
        if (block.data !== undefined) {
          const message = block as SseMessage;
          this.messages.push(message);
          if (proven) proveStreamMessage(proven, message);
        }
        this.buffer = this.buffer.slice(cut + 2);
      }
      this.wake();
    });
  }

  get isEnded(): boolean {
    return this.done;
  }

  /** Waits until `check()` holds (re-checked on every chunk), or fails after `timeoutMs`. */
  async until(
    check: (stream: this) => boolean,
    timeoutMs = 5000,
    what = 'the stream to show it',
  ): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!check(this)) {
      const left = deadline - Date.now();
      if (left <= 0 || (this.done && !check(this)))
        throw new Error(`timed out waiting for ${what}; received:\n${this.text.slice(-2000)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 200));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Waits for `count` messages in all, and answers them. */
  async messagesUntil(count: number, timeoutMs = 5000): Promise<SseMessage[]> {
    await this.until((s) => s.messages.length >= count, timeoutMs, `${count} messages`);
    return this.messages.slice();
  }

  /** Stops reading (the server's writes then queue up), without closing the connection. */
  pause(): void {
    this.response.pause();
  }

  close(): void {
    this.response.destroy();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}

function parseBlock(block: string): SseBlock {
  const parsed: SseBlock = {};
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) {
      parsed.comment = line.slice(1).trim();
      continue;
    }
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'id') parsed.id = value;
    else if (field === 'event') parsed.event = value;
    else if (field === 'data') parsed.data = parsed.data === undefined ? value : `${parsed.data}\n${value}`;
    else if (field === 'retry') parsed.retry = Number(value);
  }
  return parsed;
}

/**
 * Opens `url` as an event stream on a connection of its own; resolves once the response head has
 * arrived (a refusal too: check `status`).
 */
export function openEventStream(
  url: string,
  headers: Record<string, string> = {},
): Promise<EventStreamClient> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false, headers: { accept: 'text/event-stream', ...headers } }, (res) =>
      resolve(new EventStreamClient(res.statusCode ?? 0, res.headers, res, url)),
    );
    req.on('error', reject);
    req.end();
  });
}
