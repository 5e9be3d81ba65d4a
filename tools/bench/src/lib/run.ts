// What every benchmark run shares: where it writes, its log, its clean-up steps (last in, first
// out, once, on success, error or Ctrl-C) and the main wrapper that wires them to the process.
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import process from 'node:process';
import { REPOSITORY_ROOT } from '@platform/db';

export const ROOT = REPOSITORY_ROOT;
export const RESULTS_DIR = path.join(ROOT, 'tools/bench/results');

export const log = (message: string) => console.error(`[bench] ${message}`);

/** A date as a file name part: `2026-11-25T10-00-00-000Z`. */
export const stamp = (date: Date) => date.toISOString().replace(/[:.]/g, '-');

type CleanupStep = () => unknown;

const cleanups: CleanupStep[] = [];
let cleaning: Promise<void> | undefined;

/** Child processes still running: killed outright if the process exits without its clean-up. */
export const children = new Set<ChildProcess>();

export const onCleanup = (step: CleanupStep) => {
  cleanups.push(step);
};

function runCleanups(): Promise<void> {
  cleaning ??= (async () => {
    for (let step = cleanups.pop(); step; step = cleanups.pop()) {
      try {
        await step();
      } catch (error) {
        console.error(`cleanup: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  })();
  return cleaning;
}

/** Runs `bench(options())` with the clean-up wired to exit, errors and signals; exits with 0 or 1. */
export async function runMain<O>(options: () => O, bench: (opts: O) => Promise<void>): Promise<never> {
  // Last resort if the process exits without the async clean-up (e.g. an uncaught error in a callback).
  process.on('exit', () => {
    for (const child of children)
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.error(`\n${signal}: cleaning up`);
      void runCleanups().finally(() => process.exit(130));
    });
  }
  let code = 0;
  try {
    await bench(options());
  } catch (error) {
    console.error(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : error}`);
    code = 1;
  } finally {
    await runCleanups();
  }
  process.exit(code);
}
