import { connect } from 'node:net';
import Fastify from 'fastify';
import { chunkedFraming, serverOptions } from '../../src';
import { plainDialect } from './dialect';

/** Sends raw bytes and resolves with everything the server wrote back before closing. */
function raw(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(request));
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
  });
}

test('chunked-framing: a chunked body with broken framing is refused in the dialect, even on a route that ignores it', async () => {
  const app = Fastify(serverOptions({ logLevel: 'silent', dialect: plainDialect }));
  await app.register(chunkedFraming);
  app.post('/ignores-body', async () => ({ ok: true }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as { port: number };
  const answer = await raw(
    port,
    'POST /ignores-body HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nzz\r\n{}\r\n0\r\n\r\n',
  );
  expect(answer).toMatch(/^HTTP\/1\.1 400 /);
  expect(answer).toContain(plainDialect.contentType);
  await app.close();
});
