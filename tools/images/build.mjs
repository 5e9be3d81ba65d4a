// npm run images:build [-- <service>...] [--report=<file.json>] — builds platform/<service> for every
// service (or those named) with the real root Dockerfile, the way a user does on Docker 20.10:
//   DOCKER_BUILDKIT=1 docker build --build-arg SERVICE=<service> -t platform/<service> .
// plus `--secret id=ca,src=$NODE_EXTRA_CA_CERTS` when that variable names a file (a TLS-inspecting proxy
// between the build and the npm registry). One after the other: the `npm ci` layer is built once and
// reused by the other two. Prints each build's time and each image's size above the Node base image;
// --report writes the same as JSON (the compose test reads it).
//
// npm run images:build -- --workspace-test — builds platform/workspace-test:1 instead (and only it): the
// stand-in workspace image of the session tests, from tools/images/workspace-test (no npm, no secret).
import { existsSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  DOCKER,
  imageExists,
  imageSize,
  log,
  mb,
  NODE_IMAGE,
  ROOT,
  run,
  seconds,
  SERVICES,
  WORKSPACE_TEST_IMAGE,
} from './lib.mjs';

const args = process.argv.slice(2);
const reportPath = args.find((a) => a.startsWith('--report='))?.slice('--report='.length);
const named = args.filter((a) => !a.startsWith('--'));
const unknown = named.filter((s) => !SERVICES.includes(s));
if (unknown.length) {
  console.error(`[images] unknown service ${unknown.join(', ')}; one of ${SERVICES.join(', ')}`);
  process.exit(2);
}
if (!imageExists(NODE_IMAGE)) {
  console.error(`[images] no ${NODE_IMAGE} image: run \`npm run images:base\` first`);
  process.exit(1);
}

if (args.includes('--workspace-test')) {
  const started = Date.now();
  log(`building ${WORKSPACE_TEST_IMAGE}`);
  try {
    await run(
      DOCKER,
      ['build', '--progress=plain', '-t', WORKSPACE_TEST_IMAGE, resolve(ROOT, 'tools/images/workspace-test')],
      { env: { ...process.env, DOCKER_BUILDKIT: '1' } },
    );
  } catch (error) {
    console.error(`[images] ${WORKSPACE_TEST_IMAGE}: ${error.message}`);
    process.exit(1);
  }
  const bytes = imageSize(WORKSPACE_TEST_IMAGE);
  log(
    `${WORKSPACE_TEST_IMAGE}: built in ${seconds(started)} s, ${mb(bytes)} (${mb(bytes - imageSize(NODE_IMAGE))} above the base)`,
  );
  process.exit(0);
}

const ca = process.env.NODE_EXTRA_CA_CERTS;
const secret = ca && existsSync(ca) ? ['--secret', `id=ca,src=${ca}`] : [];
if (secret.length) log(`handing ${ca} to the build as the secret "ca"`);

const baseBytes = imageSize(NODE_IMAGE);
const started = Date.now();
const images = [];
for (const service of named.length ? named : SERVICES) {
  const tag = `platform/${service}`;
  const t = Date.now();
  log(`building ${tag}`);
  try {
    await run(
      DOCKER,
      ['build', '--progress=plain', '--build-arg', `SERVICE=${service}`, ...secret, '-t', tag, '.'],
      { cwd: ROOT, env: { ...process.env, DOCKER_BUILDKIT: '1' } },
    );
  } catch (error) {
    console.error(`[images] ${tag}: ${error.message}`);
    process.exit(1);
  }
  const bytes = imageSize(tag);
  images.push({ service, image: tag, buildSeconds: seconds(t), bytes, aboveBaseBytes: bytes - baseBytes });
}

const report = { base: { image: NODE_IMAGE, bytes: baseBytes }, totalSeconds: seconds(started), images };
log(`images:build done in ${report.totalSeconds} s; base ${NODE_IMAGE} ${mb(baseBytes)}`);
for (const i of images)
  log(`  ${i.image}: built in ${i.buildSeconds} s, ${mb(i.bytes)} (${mb(i.aboveBaseBytes)} above the base)`);
if (reportPath) writeFileSync(resolve(reportPath), `${JSON.stringify(report, null, 2)}\n`);
