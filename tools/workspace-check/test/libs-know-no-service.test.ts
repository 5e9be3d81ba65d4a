import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = join(__dirname, '..', '..', '..');

/**
 * Words that name a service, its wire format or the backends it replaces. Plain "workspace" is not
 * one of them: it also means the Nx workspace (its root, its preset), so the service is matched by its
 * project name.
 */
const SERVICE_WORDS = [
  'microblog',
  'workspace-api',
  'social',
  'kasm',
  'flask',
  'marshmallow',
  'werkzeug',
  'webargs',
  '9457',
  'problem+json',
  'problem details',
  'error_message',
];

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? filesUnder(path) : [path];
  });
}

const libSources = readdirSync(join(root, 'libs'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .flatMap((entry) => {
    const src = join(root, 'libs', entry.name, 'src');
    try {
      return filesUnder(src);
    } catch {
      return []; // a lib without sources
    }
  });

/**
 * Libraries are mechanisms every service shares, knowing none of them: a service's name, wording or
 * error format lives in that service (its `errors.ts`, its `app.ts`), never in libs/ — code, comments
 * and examples alike.
 */
describe('libs know no service', () => {
  test('there are lib sources to check', () => {
    const projects = new Set(libSources.map((file) => relative(join(root, 'libs'), file).split(/[\\/]/)[0]));
    expect([...projects]).toEqual(expect.arrayContaining(['db', 'http-kit', 'schema']));
  });

  test.each(SERVICE_WORDS)('no file under libs/*/src says "%s"', (word) => {
    const found = libSources.flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .flatMap((line, i) =>
          line.toLowerCase().includes(word) ? [`${relative(root, file)}:${i + 1}: ${line.trim()}`] : [],
        ),
    );
    expect(found).toEqual([]);
  });
});
