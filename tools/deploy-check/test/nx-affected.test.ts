import { spawnSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './k8s';
import { affectedAppsArgv, dependentsOf, workspacePackages } from './nx';

/**
 * `nx affected` selects exactly the projects a change touches: in a throwaway clone of the repository
 * (its committed state; the shared checkout's git state is never touched), one commit changes a lib
 * or an app file, and Nx's answer is compared with the dependents the package manifests declare.
 */

const TIMEOUT = 120_000;
let clone: string;
let base: string;

/** The environment without any inherited Nx or git settings (an Nx task sets some: they would point at this checkout). */
function cleanEnv(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !key.startsWith('NX_') && !key.startsWith('GIT_')),
  );
  return { ...env, CI: 'true', NX_DAEMON: 'false', NX_NO_CLOUD: 'true', NX_TUI: 'false' };
}

function run(command: string, args: string[]): string {
  const result = spawnSync(command, args, { cwd: clone, env: cleanEnv(), encoding: 'utf8' });
  if (result.error) throw result.error;
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed:\n${result.stderr}`);
  return result.stdout;
}

const git = (...args: string[]) =>
  run('git', [
    '-c',
    'user.name=deploy-check',
    '-c',
    'user.email=deploy-check@localhost',
    '-c',
    'commit.gpgsign=false',
    ...args,
  ]);

/** A commit on top of the clone's HEAD at the start that changes one file. */
function commitTouching(file: string): void {
  git('reset', '--quiet', '--hard', base);
  appendFileSync(join(clone, file), '\n// touched by tools/deploy-check\n');
  git('commit', '--quiet', '--all', '--message', `touch ${file}`);
}

/** `npx nx show projects --affected --base=HEAD~1 --head=HEAD [args]`, sorted. */
function affected(args: string[] = ['--affected']): string[] {
  const out = run('npx', ['nx', 'show', 'projects', ...args, '--base=HEAD~1', '--head=HEAD', '--json']);
  return (JSON.parse(out.slice(out.indexOf('['))) as string[]).sort();
}

/** The clone's workspace packages (its committed manifests) and its apps. */
let packages: ReturnType<typeof workspacePackages>;
let apps: { dir: string; name: string }[];

beforeAll(() => {
  clone = mkdtempSync(join(tmpdir(), 'deploy-check-affected-'));
  // The checkout's HEAD commit (a clone would check out the default branch when HEAD is detached,
  // as in a pull request's CI run). Reading it changes nothing in the checkout.
  const head = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, env: cleanEnv(), encoding: 'utf8' });
  const cloned = spawnSync('git', ['clone', '--quiet', '--no-checkout', ROOT, clone], {
    env: cleanEnv(),
    encoding: 'utf8',
  });
  if (head.status !== 0 || cloned.status !== 0)
    throw new Error(`git clone failed:\n${head.stderr}${cloned.stderr}`);
  base = head.stdout.trim();
  git('checkout', '--quiet', '--detach', base);
  // Nx runs from the checkout's installed packages; nothing is installed into the clone.
  symlinkSync(join(ROOT, 'node_modules'), join(clone, 'node_modules'), 'dir');
  packages = workspacePackages(clone);
  apps = [...packages.entries()]
    .filter(([, manifest]) => manifest.nx?.tags?.includes('type:app'))
    .map(([dir, manifest]) => ({ dir, name: manifest.name }));
});

afterAll(() => {
  if (clone) rmSync(clone, { recursive: true, force: true });
});

test('the workspace has the three apps, each with its project', () => {
  expect(apps.map((a) => a.dir).sort()).toEqual([
    'apps/microblog-api',
    'apps/social-api',
    'apps/workspace-api',
  ]);
});

test(
  'a lib change affects that lib, every app and every other dependent of the lib, and nothing else',
  () => {
    const lib = 'libs/db';
    const source = readdirSync(join(clone, lib, 'src')).find(
      (f) => f.endsWith('.ts') && !f.endsWith('.test.ts'),
    );
    commitTouching(`${lib}/src/${source}`);
    const expected = dependentsOf(packages, packages.get(lib)!.name);
    expect(expected).toEqual(expect.arrayContaining(apps.map((a) => a.name)));
    expect(affected()).toEqual(expected);
    // CI builds the image of every service.
    expect(affected(affectedAppsArgv())).toEqual(apps.map((a) => a.name).sort());
  },
  TIMEOUT,
);

test.each(['apps/microblog-api', 'apps/workspace-api', 'apps/social-api'])(
  'a change in %s affects that app alone among the apps (and only what depends on it)',
  (dir) => {
    commitTouching(`${dir}/src/app.ts`);
    const name = packages.get(dir)!.name;
    const all = affected();
    expect(all).toEqual(dependentsOf(packages, name));
    expect(all.filter((p) => apps.some((a) => a.name === p))).toEqual([name]);
    // CI builds this service's image only.
    expect(affected(affectedAppsArgv())).toEqual([name]);
  },
  TIMEOUT,
);
