import { buildTestApp, type TestApp } from './app';

export interface Server extends TestApp {
  baseUrl: string;
}

/** The real app listening on a random loopback port, for tests over real HTTP. */
export async function startServer(env: Record<string, string> = {}): Promise<Server> {
  const t = await buildTestApp(env);
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const address = t.app.server.address();
  if (!address || typeof address === 'string') throw new Error('server has no TCP address');
  return { ...t, baseUrl: `http://127.0.0.1:${address.port}` };
}
