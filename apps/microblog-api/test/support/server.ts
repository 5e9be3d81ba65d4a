import type { Config } from '../../src/config';
import { buildTestApp, type TestApp } from './app';

export interface TestServer extends TestApp {
  baseUrl: string;
}

const ENV_OF: Partial<Record<keyof Config, string>> = {
  writeRateLimit: 'WRITE_RATE_LIMIT',
  corsOrigins: 'CORS_ORIGINS',
};

/** The real app listening on a random loopback port, for tests that need real HTTP or a browser. */
export async function startTestServer(overrides: Partial<Config> = {}): Promise<TestServer> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(overrides)) {
    const name = ENV_OF[key as keyof Config];
    if (!name) throw new Error(`startTestServer: unsupported override ${key}`);
    env[name] = Array.isArray(value) ? value.join(',') : String(value);
  }
  const testApp = await buildTestApp(env);
  await testApp.app.listen({ port: 0, host: '127.0.0.1' });
  const address = testApp.app.server.address();
  if (!address || typeof address === 'string') throw new Error('server has no TCP address');
  return { ...testApp, baseUrl: `http://127.0.0.1:${address.port}` };
}
