import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..', '..');

interface Manifest {
  name: string;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  nx?: { tags?: string[] };
}

/** Every workspace package (libs/*, apps/*, tools/*, clients/*), by directory. */
const manifests = new Map<string, Manifest>(
  ['libs', 'apps', 'tools', 'clients'].flatMap((parent) =>
    readdirSync(join(ROOT, parent), { withFileTypes: true })
      .filter((d) => d.isDirectory() && existsSync(join(ROOT, parent, d.name, 'package.json')))
      .map((d): [string, Manifest] => [
        `${parent}/${d.name}`,
        JSON.parse(readFileSync(join(ROOT, parent, d.name, 'package.json'), 'utf8')),
      ]),
  ),
);

/**
 * The test kit never reaches production: `npm prune --omit=dev` keeps every workspace's
 * `dependencies`, so the kit is only ever a devDependency, and its own packages (Chromium among them)
 * are devDependencies too.
 */
describe('the test kit (tag type:testing) installs nothing for production', () => {
  const kits = [...manifests].filter(([, m]) => m.nx?.tags?.includes('type:testing'));

  test('it is libs/testing, with devDependencies only', () => {
    expect(kits.map(([dir]) => dir)).toEqual(['libs/testing']);
    for (const [, kit] of kits) expect(kit.dependencies ?? {}).toEqual({});
  });

  test('no workspace lists it among its dependencies; the apps have it as a devDependency', () => {
    const names = kits.map(([, m]) => m.name);
    const inDependencies = [...manifests]
      .filter(([, m]) => names.some((name) => name in (m.dependencies ?? {})))
      .map(([dir]) => dir);
    expect(inDependencies).toEqual([]);
    const apps = [...manifests].filter(([, m]) => m.nx?.tags?.includes('type:app'));
    for (const [, app] of apps)
      expect(Object.keys(app.devDependencies ?? {})).toEqual(expect.arrayContaining(names));
  });
});
