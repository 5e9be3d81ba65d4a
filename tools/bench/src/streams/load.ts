// The stream benchmark's load from the bench process: posts written at a steady rate (each write's
// 201 timed on the clock the subscriber processes share), and ordinary reads at a steady rate.
import { Agent, request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import { percentile, round } from '../lib/numbers';

/** Monotonic milliseconds on the clock every process of the machine shares (CLOCK_MONOTONIC). */
export const monotonicMs = () => Number(process.hrtime.bigint()) / 1e6;

/** One post written: its id and when the bench sent it and had its answer's head (monotonic ms). */
export interface Write {
  status: number;
  postId: number | null;
  sentAt: number;
  ackedAt: number;
}

/** A few keep-alive connections for the writes: a slow answer never delays the next write. */
const agent = new Agent({ keepAlive: true, maxSockets: 8 });

function writePost(base: string, n: number): Promise<Write> {
  const body = JSON.stringify({
    content: `stream bench post ${n}`,
    quest_topic: 'online_safety',
    student_name: 'Stream bench',
  });
  const sentAt = monotonicMs();
  return new Promise((resolve) => {
    const req = request(
      `${base}/api/microblog`,
      { method: 'POST', agent, headers: { 'content-type': 'application/json' } },
      (res) => {
        const ackedAt = monotonicMs();
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          let postId: number | null = null;
          if (res.statusCode === 201)
            postId = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: number }).id;
          resolve({ status: res.statusCode ?? 0, postId, sentAt, ackedAt });
        });
      },
    );
    req.on('error', () => resolve({ status: 0, postId: null, sentAt, ackedAt: monotonicMs() }));
    req.end(body);
  });
}

/**
 * Writes `rate` posts a second for `seconds` (POST /api/microblog), each at its time whatever the
 * answers to the previous ones (an open loop, as people post); resolves once every one is answered.
 */
export async function steadyPosts(base: string, rate: number, seconds: number): Promise<Write[]> {
  const start = monotonicMs();
  const writes: Promise<Write>[] = [];
  for (let n = 0; n < Math.round(rate * seconds); n++) {
    const wait = start + (n * 1000) / rate - monotonicMs();
    if (wait > 0) await sleep(wait);
    writes.push(writePost(base, n));
  }
  return Promise.all(writes);
}

/** The writes' figures: how many, and their latency to the 201. */
export function writeFigures(writes: Write[]) {
  const ms = writes.map((w) => w.ackedAt - w.sentAt);
  return {
    sent: writes.length,
    created: writes.filter((w) => w.status === 201).length,
    latencyMs: {
      p50: round(percentile(ms, 50) ?? NaN, 1),
      p99: round(percentile(ms, 99) ?? NaN, 1),
      max: round(Math.max(...ms), 1),
    },
  };
}

export interface ReadFigures {
  url: string;
  ratePerSecond: number;
  connections: number;
  requests: number;
  non2xx: number;
  errors: number;
  /** autocannon's latency percentiles (ms). */
  latencyMs: { p50: number; p90: number; p99: number; max: number };
}

/** GET `url` at `rate` requests a second over `connections` keep-alive connections for `seconds`. */
export async function steadyReads(
  url: string,
  rate: number,
  connections: number,
  seconds: number,
): Promise<ReadFigures> {
  const result = await autocannon({ url, connections, duration: seconds, overallRate: rate, timeout: 10 });
  return {
    url,
    ratePerSecond: rate,
    connections: result.connections,
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    latencyMs: {
      p50: result.latency.p50,
      p90: result.latency.p90,
      p99: result.latency.p99,
      max: result.latency.max,
    },
  };
}
