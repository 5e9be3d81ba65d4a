import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/** The panel's browser source (TypeScript with the DOM's types: panel/tsconfig.json). */
const PANEL_ENTRY = join(__dirname, '..', '..', 'panel', 'src', 'main.ts');

/** Where the build writes the script (dist/public/panel.js), which the running build serves. */
export const BUILT_PUBLIC_DIR = join(__dirname, '..', 'public');

/**
 * The panel's script: panel/src/main.ts and what it imports (the microblog client, openapi-fetch) in
 * one classic script for browsers (ES2020), minified, without a source map and without a request to
 * anywhere but the service. Workspace packages are read from their TypeScript sources (the
 * `@platform/source` condition), so no client needs building first.
 *
 * esbuild is a development dependency, loaded here only: the build writes the file, and a service
 * running from source (tsx, the tests) bundles on request. The image only serves the built file.
 */
export async function bundlePanel(): Promise<string> {
  const esbuild = await import('esbuild');
  const result = await esbuild.build({
    entryPoints: [PANEL_ENTRY],
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'browser',
    target: 'es2020',
    conditions: ['@platform/source'],
    minify: true,
    legalComments: 'none',
    charset: 'utf8',
    logLevel: 'silent',
    banner: { js: '/* microblog panel: bundled by esbuild from apps/microblog-api/panel/src */' },
  });
  return result.outputFiles[0].text;
}

/** Writes the bundle where the build's server finds it; answers the file's path. */
export async function writePanelBundle(directory = BUILT_PUBLIC_DIR): Promise<string> {
  const file = join(directory, 'panel.js');
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, await bundlePanel());
  return file;
}

// `node dist/panel/bundle.js`: the last step of the service's build.
if (require.main === module)
  writePanelBundle().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
