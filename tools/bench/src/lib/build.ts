// The service under test is always its built JavaScript (what runs in production): built here when
// missing or asked for, otherwise only a note when its sources are newer than its build.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { log, ROOT } from './run';

/** Newest modification time of the files under a directory (0 when it does not exist). */
function newestMtime(dir: string): number {
  let newest = 0;
  try {
    for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
      if (entry.isFile() && !entry.name.endsWith('.test.ts'))
        newest = Math.max(newest, statSync(path.join(entry.parentPath, entry.name)).mtimeMs);
    }
  } catch {
    // missing directory
  }
  return newest;
}

interface BuildTarget {
  /** The Nx project to build. */
  project: string;
  /** Absolute paths of the files the run needs. */
  required: string[];
  /** Project directories (from the root) whose `src/` newer than `dist/` is worth a note. */
  sources: string[];
  force: boolean;
}

/**
 * Builds `project` (`npx nx run <project>:build`, which builds its libs first) when one of the
 * `required` files is missing or `force` is set. Otherwise only says which of the `sources`
 * projects changed since their last build. A build that exits non-zero but emitted the required
 * files (tsc does on type errors) is benchmarked, with a warning.
 */
function ensureBuild({ project, required, sources, force }: BuildTarget): void {
  const built = () => required.every((file) => existsSync(file));
  if (built() && !force) {
    const stale = sources.filter(
      (dir) => newestMtime(path.join(ROOT, dir, 'src')) > newestMtime(path.join(ROOT, dir, 'dist')),
    );
    if (stale.length)
      log(
        `note: ${stale.join(', ')} changed since the last build; run with --build to measure the current source`,
      );
    return;
  }
  log(`building ${project} and its libs (npx nx run ${project}:build)`);
  const result = spawnSync('npx', ['nx', 'run', `${project}:build`, '--output-style=static'], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  if (result.status !== 0) {
    // tsc emits JavaScript even when it reports type errors: benchmark what was emitted, loudly.
    const missing = required.filter((file) => !existsSync(file));
    if (missing.length)
      throw new Error(
        `build failed (exit ${result.status}) and ${missing.map((f) => path.relative(ROOT, f)).join(', ')} is missing`,
      );
    log(`WARNING: the build exited with ${result.status}; benchmarking the JavaScript it emitted anyway`);
  }
}

/**
 * `ensureBuild` for a service of apps/: the `files` it runs from apps/<project>/dist (and
 * @platform/db's build), a note when it or the libs it is built from changed since.
 */
export function ensureServiceBuild({
  project,
  files,
  force,
}: {
  project: string;
  files: string[];
  force: boolean;
}): void {
  const dist = path.join(ROOT, 'apps', project, 'dist');
  ensureBuild({
    project,
    required: [...files.map((f) => path.join(dist, f)), path.join(ROOT, 'libs/db/dist/index.js')],
    sources: [`apps/${project}`, 'libs/db', 'libs/http-kit', 'libs/schema'],
    force,
  });
}
