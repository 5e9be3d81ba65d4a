import { execFileSync } from 'node:child_process';
import { chromium, type Browser } from 'playwright-core';

let bundled: string | undefined;

/**
 * The Chromium binary: CHROMIUM_PATH when set, else the headless Chromium shipped inside the npm
 * package `@sparticuz/chromium` (unpacked on first use), so browser tests need no system package.
 * That package is ESM-only and Jest's module system cannot load it: a plain Node process asks it.
 */
export function chromiumPath(): string {
  if (process.env.CHROMIUM_PATH) return process.env.CHROMIUM_PATH;
  bundled ??= execFileSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      "const { default: c } = await import('@sparticuz/chromium'); process.stdout.write(await c.executablePath());",
    ],
    { cwd: __dirname, encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } },
  ).trim();
  return bundled;
}

/**
 * Headless Chromium for browser tests, with the flags this workplace needs (no sandbox as root;
 * no background traffic, which a closed network refuses). The web's security model stays on:
 * tests check CORS and cookie rules through it.
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-quic',
      '--no-zygote',
    ],
  });
}
