// The stream benchmark's subscribers: a few child processes (subscriber.ts compiled to JavaScript, on
// bare Node), each holding its share of the streams on raw sockets, so that reading N streams costs
// the service's CPU nothing and costs the load generator as little as it can. Driven over IPC.
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { compileEntry } from '../lib/baselines';
import { children, onCleanup } from '../lib/run';
import type { SubscriberReply, SubscriberRequest } from './subscriber';

type Reply<T extends SubscriberRequest['type']> = Extract<SubscriberReply, { type: T }>;

/** One subscriber process: one request at a time, answered in order. */
class SubscriberProcess {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(readonly child: ChildProcess) {}

  get pid(): number {
    return this.child.pid!;
  }

  ask<T extends SubscriberRequest['type']>(
    request: Extract<SubscriberRequest, { type: T }>,
  ): Promise<Reply<T>> {
    const answer = this.queue.then(
      () =>
        new Promise<Reply<T>>((resolve, reject) => {
          const onExit = (code: number | null, signal: string | null) =>
            reject(new Error(`subscriber process ${this.pid} exited (code ${code}, signal ${signal})`));
          this.child.once('exit', onExit);
          this.child.once('message', (reply: SubscriberReply) => {
            this.child.off('exit', onExit);
            resolve(reply as Reply<T>);
          });
          this.child.send(request);
        }),
    );
    this.queue = answer.catch(() => undefined);
    return answer;
  }
}

/** The streams of one phase, as every subscriber process saw them. */
export interface Deliveries {
  /** Receipt − the write's 201 (ms), every (stream, event) pair received, sorted. */
  delays: Float64Array;
  /** Receipt − the write's sending (ms), sorted. */
  sinceSent: Float64Array;
  /** Per event: the first and the last stream's receipt − 201 (ms), the worst over the processes. */
  first: number[];
  last: number[];
  missing: number;
  complete: number;
  open: number;
  endedByServer: number;
  duplicates: number;
}

/** `processes` subscriber processes (forked now: pinned with this process when it is). */
export class Subscribers {
  private constructor(private readonly processes: SubscriberProcess[]) {}

  static start(processes: number): Subscribers {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-subscribers-'));
    onCleanup(() => rmSync(dir, { recursive: true, force: true }));
    const entry = compileEntry(dir, path.join(__dirname, 'subscriber.ts'));
    return new Subscribers(
      Array.from({ length: processes }, () => {
        const child = fork(entry, [], {
          serialization: 'advanced',
          stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
          // Bare Node: never the bench's TypeScript loader.
          execArgv: [],
        });
        children.add(child);
        onCleanup(() => {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        });
        return new SubscriberProcess(child);
      }),
    );
  }

  get pids(): number[] {
    return this.processes.map((p) => p.pid);
  }

  get count(): number {
    return this.processes.length;
  }

  /** Opens `count` streams of `url`, spread evenly over the processes; the statuses answered. */
  async open(url: string, count: number): Promise<{ open: number; statuses: Record<string, number> }> {
    const { hostname, port, pathname, search } = new URL(url);
    const share = (i: number) =>
      Math.floor(count / this.processes.length) + (i < count % this.processes.length ? 1 : 0);
    const replies = await Promise.all(
      this.processes.map((p, i) =>
        p.ask({
          type: 'open',
          host: hostname,
          port: Number(port),
          path: pathname + search,
          count: share(i),
          concurrency: 32,
        }),
      ),
    );
    const statuses: Record<string, number> = {};
    for (const reply of replies)
      for (const [status, n] of Object.entries(reply.statuses))
        statuses[status] = (statuses[status] ?? 0) + n;
    return { open: replies.reduce((sum, r) => sum + r.open, 0), statuses };
  }

  /** What the streams received of `events` (id and 201 time each), merged over the processes. */
  async collect(events: [id: number, ackedAt: number, sentAt: number][]): Promise<Deliveries> {
    const replies = await Promise.all(this.processes.map((p) => p.ask({ type: 'collect', events })));
    const merged = (pick: (r: Reply<'collect'>) => Float64Array) => {
      const all = new Float64Array(replies.reduce((sum, r) => sum + pick(r).length, 0));
      let at = 0;
      for (const r of replies) {
        all.set(pick(r), at);
        at += pick(r).length;
      }
      return all.sort();
    };
    const delays = merged((r) => r.delays);
    const worst = (pick: (r: Reply<'collect'>) => Float64Array, better: (a: number, b: number) => number) =>
      events.map((_, e) =>
        replies
          .map((r) => pick(r)[e])
          .filter((v) => !Number.isNaN(v))
          .reduce((a, b) => better(a, b), NaN),
      );
    const sum = (key: 'missing' | 'complete' | 'open' | 'endedByServer' | 'duplicates') =>
      replies.reduce((total, r) => total + r[key], 0);
    return {
      delays,
      sinceSent: merged((r) => r.sinceSent),
      first: worst(
        (r) => r.first,
        (a, b) => (Number.isNaN(a) ? b : Math.min(a, b)),
      ),
      last: worst(
        (r) => r.last,
        (a, b) => (Number.isNaN(a) ? b : Math.max(a, b)),
      ),
      missing: sum('missing'),
      complete: sum('complete'),
      open: sum('open'),
      endedByServer: sum('endedByServer'),
      duplicates: sum('duplicates'),
    };
  }

  /** How many streams have received event `id` (or a later one), of how many. */
  async progress(id: number): Promise<{ reached: number; streams: number }> {
    const replies = await Promise.all(this.processes.map((p) => p.ask({ type: 'progress', id })));
    return {
      reached: replies.reduce((sum, r) => sum + r.reached, 0),
      streams: replies.reduce((sum, r) => sum + r.streams, 0),
    };
  }

  /** Closes every stream (the client side closes). */
  async close(): Promise<void> {
    await Promise.all(this.processes.map((p) => p.ask({ type: 'close' })));
  }
}
