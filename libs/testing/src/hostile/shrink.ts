/**
 * Shrinking a storm's failure: the failing request is fast-check's run `index` of its route's
 * arbitrary from the route's seed, so `fc.check` replays exactly that run (`path`) as a property,
 * one request at a time, and shrinks it to the smallest request that still fails the same way.
 */
import fc from 'fast-check';

/** Where fast-check finds a request again: the seed and path of its run (after shrinking, too). */
export interface Replay {
  seed: number;
  path: string;
}

/** The smallest request found that fails as the storm's did, or why there is none. */
export type Minimal =
  | {
      reproduced: true;
      /** The request, as `describe` writes it, and as sent. */
      request: string;
      sent: unknown;
      problems: string[];
      status?: number;
      body?: string;
      /** Shrinking steps fast-check took (each one a smaller request that still failed). */
      shrinks: number;
      /** Shrinking ran out of time: smaller requests may still fail. */
      interrupted: boolean;
      replay: Replay;
    }
  | { reproduced: false; reason: string };

/** An answer as the shrinker sees it: the problems found with it, its status and body when any. */
export interface Judged {
  problems: string[];
  status?: number;
  body?: string;
}

export interface ShrinkOptions<T> {
  arbitrary: fc.Arbitrary<T>;
  /** The failing run: its route's seed and its index among the route's requests. */
  seed: number;
  index: number;
  /** The problems of the storm's answer: a smaller request fails the same way when it has these. */
  problems: string[];
  /** Sends a value and judges the answer. */
  judge(value: T): Promise<Judged>;
  describe(value: T): { request: string; sent: unknown };
  timeLimitMs: number;
}

const same = (a: string[], b: string[]) => a.length === b.length && a.every((p, i) => p === b[i]);

/** Replays the failing run and shrinks it (sequentially: one request in flight). */
export async function shrinkFailure<T>(options: ShrinkOptions<T>): Promise<Minimal> {
  let last: { value: T; judged: Judged } | undefined;
  const property = fc.asyncProperty(options.arbitrary, async (value) => {
    const judged = await options.judge(value);
    if (!same(judged.problems, options.problems)) return true;
    last = { value, judged };
    return false;
  });
  const details = await fc.check(property, {
    seed: options.seed,
    path: String(options.index),
    numRuns: 1,
    plugins: [fc.interruptAfterTimeLimit(options.timeLimitMs)],
  });
  if (!details.failed || !last || details.counterexamplePath === null)
    return { reproduced: false, reason: 'did not fail the same way when replayed alone' };
  return {
    reproduced: true,
    ...options.describe(last.value),
    ...last.judged,
    shrinks: details.numShrinks,
    interrupted: details.interrupted,
    replay: { seed: options.seed, path: details.counterexamplePath },
  };
}
