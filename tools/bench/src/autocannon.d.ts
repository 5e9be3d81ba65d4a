// The part of autocannon 9's API the benchmarks use (the package ships no types, and
// @types/autocannon is not installed in this workspace). Shapes from its lib/aggregateResult.js.
declare module 'autocannon' {
  function autocannon(options: autocannon.Options): Promise<autocannon.Result>;

  namespace autocannon {
    interface Options {
      url: string;
      method?: string;
      headers?: Record<string, string>;
      body?: string;
      connections?: number;
      /** Seconds. */
      duration?: number;
      /** Seconds before a request counts as a timeout. */
      timeout?: number;
      /** Requests to send in all (instead of a duration). */
      amount?: number;
      /** Requests per second over all connections (0: as fast as they are answered). */
      overallRate?: number;
    }

    /** A histogram's summary (hdr-histogram-percentiles-obj), percentiles as `p50`, `p97_5`, ... */
    interface Histogram {
      average: number;
      mean: number;
      stddev: number;
      min: number;
      max: number;
      p0_001: number;
      p0_01: number;
      p0_1: number;
      p1: number;
      p2_5: number;
      p10: number;
      p25: number;
      p50: number;
      p75: number;
      p90: number;
      p97_5: number;
      p99: number;
      p99_9: number;
      p99_99: number;
      p99_999: number;
    }

    interface Result {
      url: string;
      connections: number;
      /** Seconds. */
      duration: number;
      start: Date;
      finish: Date;
      errors: number;
      timeouts: number;
      mismatches: number;
      non2xx: number;
      resets: number;
      '1xx': number;
      '2xx': number;
      '3xx': number;
      '4xx': number;
      '5xx': number;
      statusCodeStats?: Record<string, { count: number }>;
      /** Milliseconds. */
      latency: Histogram & { totalCount: number };
      /** Per second; `total` completed, `sent` sent. */
      requests: Histogram & { total: number; sent: number };
      /** Bytes per second; `total` bytes. */
      throughput: Histogram & { total: number };
    }
  }

  export = autocannon;
}
