import { Client } from 'pg';

/** An event as a listener hands it on: whatever the reader makes of a row, with its id. */
export interface LoggedEvent {
  readonly id: number;
}

/** Where a listener reads the log (the service's events repository, on the service's pool). */
export interface EventLogReader<E extends LoggedEvent> {
  /** Up to `limit` events after `afterId`, in id order. */
  after(afterId: number, limit: number): Promise<E[]>;
  /** The newest id in the log (null when it is empty). */
  bounds(): Promise<{ newest: number | null }>;
}

/** A pino-like logger (Fastify's). */
export interface ListenerLog {
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
}

export interface EventLogListenerOptions<E extends LoggedEvent> {
  /** The connection string of the dedicated listening connection (never a pooler in transaction mode). */
  url: string;
  /** The channel the log notifies (`eventChannel(schema)`). */
  channel: string;
  reader: EventLogReader<E>;
  /** Gets every event once, in id order, in batches. */
  deliver(events: E[]): void;
  /** Rows per read (default 500). */
  batchSize?: number;
  /** Back-off of reconnections and failed reads (default 100 ms doubling to 5 s). */
  retry?: { firstDelayMs: number; maxDelayMs: number };
  /**
   * How often the idle connection is checked with a trivial query (default 30 s): a connection cut
   * somewhere on the network says nothing until something is sent.
   */
  pingIntervalMs?: number;
  log?: ListenerLog;
}

const quiet: ListenerLog = { info: () => undefined, warn: () => undefined };

/**
 * One dedicated connection per process that LISTENs on the event log's channel and hands on every
 * event once, in id order. A notification only says "read": on each one (and on every
 * (re)connection, before anything else) the listener reads the rows after the last id it handed on,
 * in batches until it has caught up, so a notification lost while it was away never becomes a lost
 * event. It starts at the log's newest id (what came before is the streams' replay, from the table).
 * A dropped connection is reopened with exponential back-off, for ever, until `close()`.
 *
 * pg's own Client, not `pg-listen`: the reconnection must run the catch-up read before anything else
 * and never give up, and that is the whole of what such a package would add.
 */
export class EventLogListener<E extends LoggedEvent> {
  private client: Client | undefined;
  private lastId: number | undefined;
  private closed = false;
  private reading = false;
  private readAgain = false;
  private connectDelay: number;
  private readDelay: number;
  private connectTimer: NodeJS.Timeout | undefined;
  private readTimer: NodeJS.Timeout | undefined;
  private pingTimer: NodeJS.Timeout | undefined;
  private resolveReady!: () => void;
  private readonly options: Required<Omit<EventLogListenerOptions<E>, 'log'>> & { log: ListenerLog };
  /** Resolves once the listener knows where the log is (its first connection and read). */
  readonly ready: Promise<void>;

  constructor(options: EventLogListenerOptions<E>) {
    this.options = {
      batchSize: 500,
      retry: { firstDelayMs: 100, maxDelayMs: 5000 },
      pingIntervalMs: 30_000,
      log: quiet,
      ...options,
    };
    this.connectDelay = this.readDelay = this.options.retry.firstDelayMs;
    this.ready = new Promise((resolve) => (this.resolveReady = resolve));
  }

  /** The last id handed on (undefined until the listener has first read the log). */
  get position(): number | undefined {
    return this.lastId;
  }

  /** The server process id of the listening connection, while connected. */
  get backendPid(): number | undefined {
    return (this.client as (Client & { processID?: number }) | undefined)?.processID;
  }

  start(): void {
    void this.connect();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.connectTimer);
    clearTimeout(this.readTimer);
    clearInterval(this.pingTimer);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new Client({
      connectionString: this.options.url,
      keepAlive: true,
      connectionTimeoutMillis: 5000,
      query_timeout: 10_000,
      application_name: 'event listener',
    });
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client));
    client.on('notification', (message) => {
      if (message.channel !== this.options.channel) return;
      const id = Number(message.payload);
      if (this.lastId === undefined || !(id <= this.lastId)) void this.catchUp();
    });
    try {
      await client.connect();
      await client.query(`LISTEN "${this.options.channel.replace(/"/g, '""')}"`);
    } catch (error) {
      client.removeAllListeners('end');
      client.on('error', () => undefined);
      await client.end().catch(() => undefined);
      this.retryConnect(error);
      return;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.connectDelay = this.options.retry.firstDelayMs;
    this.options.log.info({ channel: this.options.channel }, 'event listener connected');
    clearInterval(this.pingTimer);
    this.pingTimer = setInterval(() => {
      client.query('select 1').catch((error: unknown) => this.lost(client, error));
    }, this.options.pingIntervalMs);
    this.pingTimer.unref();
    // Listening from here on: whatever committed before is read now.
    void this.catchUp();
  }

  private lost(client: Client, error?: unknown): void {
    if (this.closed || client !== this.client) return;
    this.client = undefined;
    clearInterval(this.pingTimer);
    client.removeAllListeners('end');
    client.on('error', () => undefined);
    void client.end().catch(() => undefined);
    this.retryConnect(error ?? new Error('connection ended'));
  }

  private retryConnect(error: unknown): void {
    if (this.closed) return;
    const delay = this.connectDelay;
    this.connectDelay = Math.min(delay * 2, this.options.retry.maxDelayMs);
    this.options.log.warn({ err: error, retryInMs: delay }, 'event listener disconnected; reconnecting');
    clearTimeout(this.connectTimer);
    this.connectTimer = setTimeout(() => void this.connect(), delay);
    this.connectTimer.unref();
  }

  /** Reads until caught up; one read at a time (a notification during a read makes it go on). */
  private async catchUp(): Promise<void> {
    if (this.reading) {
      this.readAgain = true;
      return;
    }
    this.reading = true;
    clearTimeout(this.readTimer);
    try {
      do {
        this.readAgain = false;
        if (this.lastId === undefined) {
          this.lastId = (await this.options.reader.bounds()).newest ?? 0;
          this.resolveReady();
        }
        for (;;) {
          const events = await this.options.reader.after(this.lastId, this.options.batchSize);
          if (this.closed) return;
          if (events.length) {
            this.lastId = events[events.length - 1].id;
            this.options.deliver(events);
          }
          if (events.length < this.options.batchSize) break;
        }
      } while (this.readAgain && !this.closed);
      this.readDelay = this.options.retry.firstDelayMs;
    } catch (error) {
      // The pool cannot read (the database away, the table not migrated yet): try again later.
      if (this.closed) return;
      const delay = this.readDelay;
      this.readDelay = Math.min(delay * 2, this.options.retry.maxDelayMs);
      this.options.log.warn({ err: error, retryInMs: delay }, 'reading the event log failed; retrying');
      this.readTimer = setTimeout(() => void this.catchUp(), delay);
      this.readTimer.unref();
    } finally {
      this.reading = false;
    }
  }
}
