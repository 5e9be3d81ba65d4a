import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { baseDocument } from '../src/git-base';

/** A repository of its own for each test, with `apps/x/openapi.json` committed as each text given. */
function repository(...versions: string[]) {
  const root = mkdtempSync(join(tmpdir(), 'openapi-git-'));
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], {
      cwd: root,
      encoding: 'utf8',
    }).trim();
  git('init', '-q', '-b', 'main');
  const file = 'apps/x/openapi.json';
  const write = (text: string) => {
    execFileSync('mkdir', ['-p', join(root, 'apps/x')]);
    writeFileSync(join(root, file), text);
  };
  for (const text of versions) {
    write(text);
    git('add', '.');
    git('commit', '-q', '-m', text);
  }
  return { root, git, file, write, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

describe('the document a change is judged against', () => {
  test('on main: the version before the current one (the fresh clone CI has)', () => {
    const repo = repository('v1', 'v2');
    repo.git('commit', '-q', '--allow-empty', '-m', 'unrelated');
    expect(baseDocument(repo.root, repo.file, 'v2')).toMatchObject({ text: 'v1' });
    repo.cleanup();
  });

  test('an uncommitted change is judged against HEAD', () => {
    const repo = repository('v1', 'v2');
    expect(baseDocument(repo.root, repo.file, 'v3')).toMatchObject({ text: 'v2' });
    repo.cleanup();
  });

  test('a branch is judged against its merge base with origin/main', () => {
    const repo = repository('v1');
    repo.git('update-ref', 'refs/remotes/origin/main', 'HEAD');
    repo.git('checkout', '-q', '-b', 'feature');
    for (const text of ['v2', 'v3']) {
      repo.write(text);
      repo.git('commit', '-q', '-am', text);
    }
    const base = baseDocument(repo.root, repo.file, 'v3');
    expect(base).toMatchObject({ text: 'v1', from: expect.stringMatching(/merge base/) });
    repo.cleanup();
  });

  test('OPENAPI_BASE names the base itself', () => {
    const repo = repository('v1', 'v2', 'v3');
    expect(baseDocument(repo.root, repo.file, 'v3', 'HEAD~2')).toMatchObject({ text: 'v1' });
    repo.cleanup();
  });

  test('a new document has nothing to be judged against: skipped, and said why', () => {
    const repo = repository('v1');
    expect(baseDocument(repo.root, repo.file, 'v1')).toEqual({
      skip: expect.stringMatching(/no earlier version/),
    });
    repo.cleanup();
  });
});
