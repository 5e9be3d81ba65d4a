import * as testing from '@platform/testing';
import type { Config } from '../../src/config';
import { buildTestApp, type TestApp } from './app';

export type TestServer = testing.TestServer<TestApp>;

const ENV_OF: Partial<Record<keyof Config, string>> = {
  corsOrigins: 'CORS_ORIGINS',
};

/**
 * The real app listening on a random loopback port, for tests that need real HTTP or a browser.
 * `overrides` names configuration fields; `env` sets variables as they are written (the write limits).
 */
export async function startTestServer(
  overrides: Partial<Config> = {},
  env: Record<string, string> = {},
): Promise<TestServer> {
  const variables: Record<string, string> = { ...env };
  for (const [key, value] of Object.entries(overrides)) {
    const name = ENV_OF[key as keyof Config];
    if (!name) throw new Error(`startTestServer: unsupported override ${key}`);
    variables[name] = Array.isArray(value) ? value.join(',') : String(value);
  }
  return testing.startTestServer(await buildTestApp(variables));
}
