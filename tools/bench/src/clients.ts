/**
 * The typed clients' weight in a frontend bundle: each client package built (`dist/`, as published)
 * and bundled by esbuild for the browser, minified, then gzipped; beside it, in the same run, the
 * baseline every client is built on: openapi-fetch alone, bundled the same way. A client that
 * re-exports everything is measured (`import * as client`), and what the README's example needs
 * (`createXClient` only, tree-shaken).
 *
 *   npm run bench:clients
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const REPOSITORY = resolve(__dirname, '..', '..', '..');
const CLIENTS = [
  { name: '@platform/microblog-client', directory: 'clients/microblog', create: 'createMicroblogClient' },
  { name: '@platform/social-client', directory: 'clients/social', create: 'createSocialClient' },
  { name: '@platform/workspace-client', directory: 'clients/workspace', create: 'createWorkspaceClient' },
];

/** Minified and gzipped bytes of `source` bundled for the browser (packages resolved as published). */
async function bundled(source: string, work: string): Promise<{ minified: number; gzipped: number }> {
  const entry = join(work, `entry-${Math.random().toString(36).slice(2)}.mjs`);
  writeFileSync(entry, source);
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    write: false,
    // From the repository's node_modules, without the `@platform/source` condition: `dist/`.
    nodePaths: [join(REPOSITORY, 'node_modules')],
    logLevel: 'silent',
  });
  const code = result.outputFiles[0].contents;
  return { minified: code.byteLength, gzipped: gzipSync(code, { level: 9 }).byteLength };
}

const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;

async function main() {
  for (const client of CLIENTS)
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: join(REPOSITORY, client.directory) });
  const work = mkdtempSync(join(tmpdir(), 'client-size-'));
  try {
    const baseline = await bundled(
      "import createClient from 'openapi-fetch';\nglobalThis.c = createClient;\n",
      work,
    );
    console.log(
      `baseline openapi-fetch alone: ${kib(baseline.minified)} minified, ${kib(baseline.gzipped)} gzipped`,
    );
    for (const client of CLIENTS) {
      const whole = await bundled(`import * as c from '${client.name}';\nglobalThis.c = c;\n`, work);
      const used = await bundled(
        `import { ${client.create} } from '${client.name}';\nglobalThis.c = ${client.create};\n`,
        work,
      );
      console.log(
        `${client.name}: everything ${kib(whole.minified)} minified, ${kib(whole.gzipped)} gzipped ` +
          `(${(whole.gzipped / baseline.gzipped).toFixed(2)}x openapi-fetch); ` +
          `${client.create} only ${kib(used.gzipped)} gzipped (${(used.gzipped / baseline.gzipped).toFixed(2)}x)`,
      );
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

void main();
