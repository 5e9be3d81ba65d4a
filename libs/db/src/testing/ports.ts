import { createServer, type AddressInfo } from 'node:net';

/**
 * A TCP port of 127.0.0.1 nobody listens on right now (bound, then released): for a server a test
 * starts, or as an address that refuses connections.
 */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((done) => server.close(() => done()));
  return port;
}
