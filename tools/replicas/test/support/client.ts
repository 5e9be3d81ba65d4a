import { Agent, request } from 'node:http';
import { REPLICA_HEADER } from '../../src/haproxy';

/** What one request got: a status, or the error that ended it (a reset, a closed connection). */
export interface Outcome {
  service: string;
  /** What the request was for (`write`, `read`, …). */
  kind: string;
  method: string;
  path: string;
  /** The client address it came from. */
  address: string;
  status?: number;
  error?: string;
  /** The replica that answered (the balancer's x-replica header). */
  replica?: string;
  body?: unknown;
  headers?: Record<string, string | string[] | undefined>;
  start: number;
  end: number;
}

export interface RequestSpec {
  service: string;
  kind: string;
  method: 'GET' | 'POST';
  /** The balancer's base URL of the service. */
  baseUrl: string;
  path: string;
  headers?: Record<string, string>;
  body?: unknown;
}

const REQUEST_TIMEOUT_MS = 15_000;

/**
 * A client with an address of its own: connections leave from `address` (any of 127.0.0.0/8 is this
 * machine), so HAProxy's X-Forwarded-For names it, and the services count its rate limits apart from
 * every other client's — a real client address, nothing a client could forge.
 */
export class Client {
  private readonly agent: Agent;

  constructor(readonly address: string) {
    this.agent = new Agent({ keepAlive: true, maxSockets: 8, localAddress: address });
  }

  send(spec: RequestSpec): Promise<Outcome> {
    const start = Date.now();
    const payload = spec.body === undefined ? undefined : JSON.stringify(spec.body);
    const base = {
      service: spec.service,
      kind: spec.kind,
      method: spec.method,
      path: spec.path,
      address: this.address,
      start,
    };
    return new Promise((resolve) => {
      const req = request(
        new URL(spec.path, spec.baseUrl),
        {
          method: spec.method,
          agent: this.agent,
          timeout: REQUEST_TIMEOUT_MS,
          headers: {
            ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
            ...spec.headers,
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('error', (error) => resolve({ ...base, error: error.message, end: Date.now() }));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let body: unknown = text;
            try {
              body = text ? JSON.parse(text) : undefined;
            } catch {
              // Not JSON: kept as text.
            }
            const replica = res.headers[REPLICA_HEADER];
            resolve({
              ...base,
              status: res.statusCode,
              replica: typeof replica === 'string' ? replica : undefined,
              body,
              headers: res.headers,
              end: Date.now(),
            });
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error('timed out')));
      req.on('error', (error) => resolve({ ...base, error: error.message, end: Date.now() }));
      req.end(payload);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

/** Clients by address, made on first use. */
export class Clients {
  private readonly byAddress = new Map<string, Client>();

  get(address: string): Client {
    let client = this.byAddress.get(address);
    if (!client) {
      client = new Client(address);
      this.byAddress.set(address, client);
    }
    return client;
  }

  closeAll(): void {
    for (const client of this.byAddress.values()) client.close();
    this.byAddress.clear();
  }
}
