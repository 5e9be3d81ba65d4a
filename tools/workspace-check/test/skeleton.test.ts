import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const root = join(__dirname, '..', '..', '..');

/** The top-level files of every app's `src/` (STYLE.md, "the shape we want"), and only these. */
const SKELETON_FILES = ['main.ts', 'app.ts', 'cli.ts', 'config.ts', 'errors.ts'];

/** Folders every app has: its plugins by layer, its demo data, its migrations. */
const SKELETON_DIRS = ['plugins/external', 'plugins/app', 'seed'];
const MIGRATIONS_INDEX = 'db/migrations/index.ts';

const isDir = (path: string) => statSync(path, { throwIfNoEntry: false })?.isDirectory() ?? false;
const isFile = (path: string) => statSync(path, { throwIfNoEntry: false })?.isFile() ?? false;

/** What an app's `src/` lacks of the skeleton, and the top-level `.ts` files it has beyond it. */
function skeletonProblems(src: string): string[] {
  const missing = [...SKELETON_FILES, MIGRATIONS_INDEX]
    .filter((file) => !isFile(join(src, file)))
    .map((file) => `missing ${file}`);
  // A folder git keeps has at least one file in it.
  const missingDirs = SKELETON_DIRS.filter(
    (dir) => !isDir(join(src, dir)) || readdirSync(join(src, dir)).length === 0,
  ).map((dir) => `missing ${dir}/`);
  const stray = readdirSync(src, { withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts') && !SKELETON_FILES.includes(entry.name))
    .map((entry) => `stray top-level ${entry.name} (a feature, plugins/, seed/ or wire/ file)`);
  return [...missing, ...missingDirs, ...stray];
}

const apps = readdirSync(join(root, 'apps'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && isDir(join(root, 'apps', entry.name, 'src')))
  .map((entry) => entry.name);

describe('every app follows the skeleton', () => {
  test('there are apps to check', () => {
    expect(apps).toEqual(expect.arrayContaining(['microblog-api', 'social-api', 'workspace-api']));
  });

  test.each(apps)('%s has the skeleton and nothing else at the top of src/', (app) => {
    expect(skeletonProblems(join(root, 'apps', app, 'src'))).toEqual([]);
  });

  describe('the check itself', () => {
    let scratch: string;
    const write = (path: string) => {
      mkdirSync(dirname(join(scratch, path)), { recursive: true });
      writeFileSync(join(scratch, path), 'export {};\n');
    };
    beforeEach(() => {
      scratch = mkdtempSync(join(tmpdir(), 'skeleton-'));
    });
    afterEach(() => rmSync(scratch, { recursive: true, force: true }));

    test('a complete app passes', () => {
      for (const file of [...SKELETON_FILES, MIGRATIONS_INDEX]) write(file);
      for (const dir of SKELETON_DIRS) write(`${dir}/index.ts`);
      write('posts/routes.ts');
      expect(skeletonProblems(scratch)).toEqual([]);
    });

    test('a missing file or folder and a stray top-level file are reported', () => {
      for (const file of SKELETON_FILES.filter((f) => f !== 'errors.ts')) write(file);
      write(MIGRATIONS_INDEX);
      write('plugins/app/auth.ts');
      mkdirSync(join(scratch, 'seed'));
      write('pagination.ts');
      expect(skeletonProblems(scratch).sort()).toEqual(
        [
          'missing errors.ts',
          'missing plugins/external/',
          'missing seed/',
          'stray top-level pagination.ts (a feature, plugins/, seed/ or wire/ file)',
        ].sort(),
      );
    });
  });
});
