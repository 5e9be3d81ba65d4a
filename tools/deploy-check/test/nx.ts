import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * How CI picks the images to build: the affected projects tagged `type:app` (the apps' package.json
 * `nx.tags`). Not `--type app`: Nx infers the apps as libraries (they have `exports`) and the tools as
 * applications. The workflow runs `npx nx show projects <these> --base=… --head=… --json`.
 */
export const AFFECTED_APPS_ARGS = ['--affected', '--projects', "'tag:type:app'"];
/** The same arguments without the shell's quotes, for spawning nx directly. */
export const affectedAppsArgv = () => AFFECTED_APPS_ARGS.map((a) => a.replace(/^'(.*)'$/, '$1'));

interface Manifest {
  name: string;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  nx?: { tags?: string[] };
}

/** Every workspace package of a checkout (libs/*, apps/*, tools/*), by directory. */
export function workspacePackages(root: string): Map<string, Manifest> {
  const globs: string[] = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).workspaces;
  const packages = new Map<string, Manifest>();
  for (const glob of globs) {
    const parent = glob.replace(/\/\*$/, '');
    if (!existsSync(join(root, parent))) continue;
    for (const entry of readdirSync(join(root, parent), { withFileTypes: true })) {
      const file = join(root, parent, entry.name, 'package.json');
      if (entry.isDirectory() && existsSync(file)) {
        packages.set(`${parent}/${entry.name}`, JSON.parse(readFileSync(file, 'utf8')));
      }
    }
  }
  return packages;
}

/**
 * A package and every package that depends on it, directly or not, by the workspace dependencies the
 * manifests declare: what a change to it should affect, worked out without Nx.
 */
export function dependentsOf(packages: Map<string, Manifest>, name: string): string[] {
  const affected = new Set([name]);
  for (let grew = true; grew;) {
    grew = false;
    for (const manifest of packages.values()) {
      if (affected.has(manifest.name)) continue;
      const uses = Object.keys({
        ...manifest.dependencies,
        ...manifest.devDependencies,
        ...manifest.peerDependencies,
      });
      if (uses.some((dependency) => affected.has(dependency))) {
        affected.add(manifest.name);
        grew = true;
      }
    }
  }
  return [...affected].sort();
}
