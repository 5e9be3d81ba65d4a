import { chromium, type Browser } from 'playwright-core';

/**
 * Headless Chromium for browser tests: Debian's /usr/bin/chromium (or CHROMIUM_PATH), with the
 * flags this workplace needs (no sandbox as root; no background traffic, which the closed network
 * would refuse).
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-quic',
    ],
  });
}
