import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import semver from 'semver';

const root = join(__dirname, '..', '..', '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { engines?: { node?: string } };
const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
  packages: Record<
    string,
    {
      version?: string;
      engines?: { node?: string } | string[];
      optionalDependencies?: Record<string, string>;
    }
  >;
};
const nameOf = (path: string) => path.replace(/^.*node_modules\//, '');

/** Install hygiene: what `npm install` / `npm ci` gives on the Node versions and platforms we promise. */
describe('install hygiene', () => {
  const promised = pkg.engines?.node ?? '';
  const oldest = semver.minVersion(promised);

  test('package.json engines and .nvmrc agree, and this Node is inside them', () => {
    expect(oldest).not.toBeNull();
    const nvmrc = readFileSync(join(root, '.nvmrc'), 'utf8').trim().replace(/^v/, '');
    expect(Number(nvmrc.split('.')[0])).toBe(semver.major(oldest!));
    expect(semver.satisfies(process.version, promised)).toBe(true);
  });

  // npm's EBADENGINE warning only checks the Node running the install; this checks the oldest promised.
  test('every locked package supports the oldest Node the project promises', () => {
    const unsupported = Object.entries(lock.packages)
      .filter(
        ([path, entry]) =>
          path && typeof entry.engines === 'object' && !Array.isArray(entry.engines) && entry.engines.node,
      )
      .filter(([, entry]) => !semver.satisfies(oldest!, (entry.engines as { node: string }).node))
      .map(
        ([path, entry]) =>
          `${nameOf(path)}@${entry.version} needs Node ${(entry.engines as { node: string }).node}`,
      );
    expect(unsupported).toEqual([]);
  });

  // A lockfile written over an existing node_modules can drop other platforms' native packages;
  // `npm ci` on macOS or ARM then installs none of them.
  test("the lockfile carries every platform's optional packages", () => {
    const locked = new Set(Object.keys(lock.packages).map(nameOf));
    const missing = Object.entries(lock.packages).flatMap(([path, entry]) =>
      Object.keys(entry.optionalDependencies ?? {})
        .filter((name) => !locked.has(name))
        .map((name) => `${name} (optional dependency of ${nameOf(path) || 'the root'})`),
    );
    expect(missing).toEqual([]);
  });
});
