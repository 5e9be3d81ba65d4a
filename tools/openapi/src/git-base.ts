import { execFileSync } from 'node:child_process';

/** The document to compare with, and where it comes from; or why there is none. */
export type BaseDocument = { text: string; from: string } | { skip: string };

function git(cwd: string, args: string[]): string | undefined {
  try {
    return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return undefined;
  }
}

const showAt = (root: string, commit: string, file: string) => git(root, ['show', `${commit}:${file}`]);

/**
 * The earlier version of `file` (relative to the repository root) that the current one is judged
 * against:
 * - `base` when given (OPENAPI_BASE: a commit, a branch);
 * - else the merge base with `origin/main`, when the work is not on it yet (a branch, a pull request);
 * - else (on main itself, as in CI's fresh clone of main, where `origin/main` is HEAD) the version
 *   before the current one: the newest commit whose copy differs from the file as it is now, so an
 *   uncommitted change is judged against HEAD and a committed one against its predecessor;
 * - else nothing (a new document, or a shallow clone without that history): skipped, and said so.
 */
export function baseDocument(root: string, file: string, current: string, base?: string): BaseDocument {
  if (base) {
    const text = showAt(root, base, file);
    return text === undefined ? { skip: `${file} does not exist at ${base}` } : { text, from: base };
  }
  const head = git(root, ['rev-parse', 'HEAD'])?.trim();
  if (!head) return { skip: 'not a git checkout' };
  if (git(root, ['rev-parse', '--verify', '--quiet', 'origin/main'])) {
    const mergeBase = git(root, ['merge-base', 'HEAD', 'origin/main'])?.trim();
    if (mergeBase && mergeBase !== head) {
      const text = showAt(root, mergeBase, file);
      return text === undefined
        ? { skip: `${file} is new since the merge base ${mergeBase.slice(0, 10)} with origin/main` }
        : { text, from: `the merge base ${mergeBase.slice(0, 10)} with origin/main` };
    }
  }
  const commits = git(root, ['log', '--format=%H', '--', file])?.split('\n').filter(Boolean) ?? [];
  for (const commit of commits) {
    const text = showAt(root, commit, file);
    if (text !== undefined && text !== current)
      return { text, from: `the previous version of ${file} (${commit.slice(0, 10)})` };
  }
  return { skip: `no earlier version of ${file} in this clone's history` };
}
