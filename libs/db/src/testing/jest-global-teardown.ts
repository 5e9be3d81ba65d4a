/** Jest global teardown: leaves the local server the setup joined (stopping it when nobody else uses it). */
export default async function teardown(): Promise<void> {
  const server = globalThis.__localTestServer;
  if (!server) return;
  globalThis.__localTestServer = undefined;
  delete process.env.DATABASE_URL;
  await server.release();
}
