import { Presets, SingleBar } from 'cli-progress';
import type { Kysely } from 'kysely';
import type { SocialDatabase } from '../db/schema';

export interface Progress {
  advance(by: number): void;
  stop(): void;
}

export interface FakeOptions {
  /** How progress is shown (default: a bar when stdout is a terminal). */
  progressBar?: typeof progressBar;
}

/** A fake data generator: adds `count` rows of its kind and returns how many it added. */
export type FakeGenerator = (
  db: Kysely<SocialDatabase>,
  count: number,
  options?: FakeOptions,
) => Promise<number>;

const silent: Progress = { advance: () => undefined, stop: () => undefined };

/**
 * A progress bar on a terminal, nothing otherwise: pipes, logs and tests see only the command's
 * final line. The bar clears itself when done.
 */
export function progressBar(
  label: string,
  total: number,
  stream: NodeJS.WriteStream = process.stdout,
): Progress {
  if (!stream.isTTY || total <= 0) return silent;
  const bar = new SingleBar(
    {
      stream,
      format: `${label.padEnd(7)} [{bar}] {percentage}% | {value}/{total} | {duration_formatted}, ETA {eta_formatted}`,
      hideCursor: true,
      clearOnComplete: true,
      etaBuffer: 50,
    },
    Presets.shades_classic,
  );
  bar.start(total, 0);
  return { advance: (by) => bar.increment(by), stop: () => bar.stop() };
}
