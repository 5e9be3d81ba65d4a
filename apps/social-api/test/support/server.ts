import { buildTestApp, type TestApp } from './app';

export interface TestServer extends TestApp {
  baseUrl: string;
}

/** The real app listening on a random loopback port, for tests that need real HTTP or a browser. */
export async function startTestServer(env: Record<string, string> = {}): Promise<TestServer> {
  const testApp = await buildTestApp(env);
  await testApp.app.listen({ port: 0, host: '127.0.0.1' });
  const address = testApp.app.server.address();
  if (!address || typeof address === 'string') throw new Error('server has no TCP address');
  return { ...testApp, baseUrl: `http://127.0.0.1:${address.port}` };
}
