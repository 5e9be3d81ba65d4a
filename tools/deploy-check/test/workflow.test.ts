import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ROOT } from './k8s';
import { AFFECTED_APPS_ARGS } from './nx';

/**
 * The team's CI (.github/workflows/ci.yml), checked offline: the workflow linter from npm
 * (`@action-validator/cli`, the GitHub workflow schema), then what the workflow must do.
 */

const WORKFLOW = '.github/workflows/ci.yml';
const text = readFileSync(join(ROOT, WORKFLOW), 'utf8');

interface Step {
  id?: string;
  name?: string;
  uses?: string;
  run?: string;
  if?: string;
  with?: Record<string, string | number | boolean>;
}
interface Job {
  needs?: string | string[];
  if?: string;
  env?: Record<string, string>;
  services?: Record<
    string,
    { image: string; env?: Record<string, string>; ports?: string[]; options?: string }
  >;
  outputs?: Record<string, string>;
  strategy?: { matrix?: Record<string, unknown> };
  permissions?: Record<string, string>;
  steps: Step[];
}
const workflow = parse(text) as {
  on: Record<string, unknown>;
  env?: Record<string, string>;
  jobs: Record<string, Job>;
};

/** `npx action-validator <file>` without npx's start-up: the package's own bin. */
function actionValidator(file: string) {
  return spawnSync(process.execPath, [join(ROOT, 'node_modules', '.bin', 'action-validator'), file], {
    cwd: ROOT,
    encoding: 'utf8',
  });
}

const steps = (job: string) => workflow.jobs[job].steps;
const using = (job: string, action: string) => steps(job).filter((s) => s.uses?.split('@')[0] === action);

describe('workflow linter', () => {
  test(`${WORKFLOW} passes action-validator`, () => {
    const result = actionValidator(WORKFLOW);
    expect({ status: result.status, output: result.stdout + result.stderr }).toEqual({
      status: 0,
      output: '',
    });
  });

  test('action-validator rejects a broken copy (the check is live)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'deploy-check-workflow-'));
    try {
      const broken = join(dir, 'ci.yml');
      writeFileSync(broken, text.replace(/runs-on:/g, 'runs_on:'));
      const result = actionValidator(broken);
      expect(result.status).not.toBe(0);
      expect(result.stdout + result.stderr).toContain('runs_on');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('what the workflow does', () => {
  test('runs on push to main and on pull requests, with Nx non-interactive and offline', () => {
    expect(Object.keys(workflow.on).sort()).toEqual(['pull_request', 'push']);
    expect(workflow.on.push).toEqual({ branches: ['main'] });
    expect(workflow.env).toMatchObject({
      CI: 'true',
      NX_DAEMON: 'false',
      NX_NO_CLOUD: 'true',
      NX_TUI: 'false',
    });
  });

  test('checks out full history and computes the merge base (nx-set-shas) before nx affected', () => {
    const checkout = using('check', 'actions/checkout');
    expect(checkout).toHaveLength(1);
    expect(checkout[0].with?.['fetch-depth']).toBe(0);
    const shas = steps('check').findIndex((s) => s.uses?.startsWith('nrwl/nx-set-shas@'));
    const affected = steps('check').findIndex((s) => s.run?.includes('nx affected'));
    expect(shas).toBeGreaterThanOrEqual(0);
    expect(affected).toBeGreaterThan(shas);
    expect(workflow.jobs.check.permissions).toMatchObject({ actions: 'read', contents: 'read' });
  });

  test('npm ci with the npm cache of setup-node on each supported Node (.nvmrc and the oldest of engines), and the Nx cache', () => {
    const [node] = using('check', 'actions/setup-node');
    expect(node.with).toMatchObject({ cache: 'npm', 'node-version': '${{ matrix.node }}' });
    const nvmrc = readFileSync(join(ROOT, '.nvmrc'), 'utf8').trim();
    const engines = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).engines.node as string;
    const oldest = /^\^?(\d+\.\d+)/.exec(engines)?.[1];
    expect(workflow.jobs.check.strategy?.matrix?.node).toEqual([nvmrc, oldest]);
    expect(nvmrc).toBe('24');
    expect(steps('check').some((s) => /^npm ci\b/.test(s.run ?? ''))).toBe(true);
    const [cache] = using('check', 'actions/cache');
    expect(cache.with?.path).toBe('.nx/cache');
    expect(String(cache.with?.key)).toContain("hashFiles('package-lock.json')");
    expect(String(cache.with?.key)).toContain('${{ matrix.node }}');
    const nxCache = JSON.parse(readFileSync(join(ROOT, 'nx.json'), 'utf8')).cacheDirectory;
    expect(nxCache).toBe('.nx/cache');
  });

  test('nx affected -t lint typecheck test build against a PostgreSQL 15 service container', () => {
    const job = workflow.jobs.check;
    const run = steps('check').find((s) => s.run?.includes('nx affected'))?.run ?? '';
    expect(run).toMatch(/npx nx affected -t lint typecheck test build --base="\$NX_BASE" --head="\$NX_HEAD"/);
    const postgres = job.services?.postgres;
    expect(postgres?.image).toBe('postgres:15');
    expect(postgres?.ports).toEqual(['5432:5432']);
    expect(postgres?.options).toContain('pg_isready');
    const url = new URL(job.env?.DATABASE_URL ?? '');
    expect([url.protocol, url.hostname, url.port]).toEqual(['postgres:', '127.0.0.1', '5432']);
    expect(url.username).toBe(postgres?.env?.POSTGRES_USER);
    expect(url.password).toBe(postgres?.env?.POSTGRES_PASSWORD);
    expect(url.pathname).toBe(`/${postgres?.env?.POSTGRES_DB}`);
  });

  test("images: only the affected services' (the command the nx-affected test runs), pushed from main only", () => {
    const select = steps('check').find((s) => s.id === 'affected-apps');
    expect(select?.run).toContain(
      `npx nx show projects ${AFFECTED_APPS_ARGS.join(' ')} --base="$NX_BASE" --head="$NX_HEAD" --json`,
    );
    expect(workflow.jobs.check.outputs?.services).toBe('${{ steps.affected-apps.outputs.services }}');

    const images = workflow.jobs.images;
    expect(images.needs).toBe('check');
    expect(images.if).toContain("needs.check.outputs.services != '[]'");
    expect(images.strategy?.matrix?.service).toBe('${{ fromJSON(needs.check.outputs.services) }}');
    expect(images.permissions).toMatchObject({ packages: 'write' });
    expect(images.env?.PUSH).toBe("${{ github.event_name == 'push' && github.ref == 'refs/heads/main' }}");

    const [build] = using('images', 'docker/build-push-action');
    expect(build.with).toMatchObject({
      context: '.',
      file: 'Dockerfile',
      'build-args': 'SERVICE=${{ matrix.service }}',
      push: "${{ env.PUSH == 'true' }}",
    });
    expect(String(build.with?.tags)).toContain('${{ steps.image.outputs.name }}:${{ github.sha }}');
    const image = steps('images').find((s) => s.id === 'image');
    expect(image?.run).toContain('ghcr.io/${GITHUB_REPOSITORY,,}/${{ matrix.service }}');
    const [login] = using('images', 'docker/login-action');
    expect(login.if).toBe("env.PUSH == 'true'");
    expect(login.with?.registry).toBe('ghcr.io');
  });
});
