import { createConnection, createServer, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  port: number;
  /** Drops every open connection and refuses (accepts then closes) new ones: "the database went away". */
  cut(): void;
  /** Forwards connections again: "the database is back". */
  restore(): void;
  /**
   * Holds every byte in both directions without closing anything, and accepts new connections
   * without answering: "the database is frozen" (SIGSTOP) or a silent partition.
   */
  freeze(): void;
  /** Delivers what was held, in order, and forwards again: "the database resumed". */
  thaw(): void;
  close(): Promise<void>;
}

/** A loopback TCP proxy a test can cut or freeze, to play a database outage without touching the database. */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const open = new Set<Socket>();
  let up = true;
  // While frozen, what each connection would have forwarded (a chunk, or `null` for its end).
  let held: [Socket, Buffer | null][] | undefined;
  const forward = (to: Socket, chunk: Buffer | null) => {
    if (to.destroyed) return;
    if (chunk) to.write(chunk);
    else to.end();
  };
  const server: Server = createServer((client) => {
    if (!up) {
      client.destroy();
      return;
    }
    const upstream = createConnection(target);
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ]) {
      open.add(from);
      from.on('close', () => open.delete(from));
      from.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
      from.on('data', (chunk: Buffer) => (held ? held.push([to, chunk]) : forward(to, chunk)));
      from.on('end', () => (held ? held.push([to, null]) : forward(to, null)));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('proxy has no TCP address');
  return {
    port: address.port,
    cut() {
      up = false;
      held = held && [];
      for (const s of open) s.destroy();
    },
    restore() {
      up = true;
    },
    freeze() {
      held ??= [];
    },
    thaw() {
      const pending = held ?? [];
      held = undefined;
      for (const [to, chunk] of pending) forward(to, chunk);
    },
    async close() {
      held = undefined;
      for (const s of open) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
