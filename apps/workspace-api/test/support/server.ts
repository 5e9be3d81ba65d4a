import * as testing from '@platform/testing';
import { buildTestApp, type TestApp } from './app';

export type TestServer = testing.TestServer<TestApp>;

/** The real app listening on a random loopback port, for tests over real HTTP. */
export async function startTestServer(env: Record<string, string> = {}): Promise<TestServer> {
  return testing.startTestServer(await buildTestApp(env));
}
