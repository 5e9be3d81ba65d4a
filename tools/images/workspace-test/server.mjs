// The test workspace: what a session container serves on its web port, with Node alone (no package),
// so the engine, the service's proxy and a browser can be tested end to end without Kasm's images.
//   GET <any path>            a small HTML page: title "Workspace test", the session's KASM_TEST_MESSAGE,
//                             and a script that opens a WebSocket to `websockify` next to the page
//                             (same origin, relative path, as noVNC does) and shows the echo
//   GET /healthz              "ok" (a readiness probe)
//   upgrade …/websockify      a WebSocket echo (RFC 6455: text, binary, ping, close; frames up to 1 MiB)
// WORKSPACE_TEST_FAIL=1 exits with code 3 at once (a workspace that cannot start).
// WORKSPACE_TEST_PORT moves the port (default 6901, Kasm's).
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import { hostname } from 'node:os';

if (process.env.WORKSPACE_TEST_FAIL === '1') {
  console.error('workspace-test: WORKSPACE_TEST_FAIL=1, exiting with code 3');
  process.exit(3);
}

const PORT = Number(process.env.WORKSPACE_TEST_PORT ?? 6901);
const MAX_PAYLOAD = 1024 * 1024;
const WEBSOCKET_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

const escapeHtml = (text) =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c],
  );

function page() {
  const message = process.env.KASM_TEST_MESSAGE;
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Workspace test</title></head>
<body>
<h1>Workspace test</h1>
<p>Container <code id="hostname">${escapeHtml(hostname())}</code>, user id ${process.getuid?.() ?? '?'}.</p>
<p id="message">${message === undefined ? '(no KASM_TEST_MESSAGE)' : escapeHtml(message)}</p>
<p id="echo">WebSocket: connecting</p>
<script>
  const echo = document.getElementById('echo');
  const url = new URL('websockify', location.href);
  url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const socket = new WebSocket(url);
  socket.onopen = () => socket.send('hello from the page');
  socket.onmessage = (event) => { echo.textContent = 'echo: ' + event.data; };
  socket.onerror = () => { echo.textContent = 'WebSocket: error'; };
</script>
</body>
</html>
`;
}

const server = createServer((request, response) => {
  const path = new URL(request.url ?? '/', 'http://workspace').pathname;
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    response.writeHead(405, { allow: 'GET, HEAD' }).end();
  } else if (path === '/healthz') {
    response.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
  } else if (path.endsWith('/websockify')) {
    response.writeHead(426, { upgrade: 'websocket', 'content-type': 'text/plain' }).end('WebSocket only\n');
  } else {
    const body = page();
    response
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
      .end(request.method === 'HEAD' ? undefined : body);
  }
});

server.on('upgrade', (request, socket, head) => {
  const path = new URL(request.url ?? '/', 'http://workspace').pathname;
  const key = request.headers['sec-websocket-key'];
  const refuse = (status, reason) => {
    socket.end(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
  };
  if (!path.endsWith('/websockify')) return refuse(404, 'Not Found');
  if (String(request.headers.upgrade).toLowerCase() !== 'websocket' || typeof key !== 'string')
    return refuse(400, 'Bad Request');
  if (request.headers['sec-websocket-version'] !== '13') return refuse(426, 'Upgrade Required');
  const accept = createHash('sha1')
    .update(key + WEBSOCKET_GUID)
    .digest('base64');
  // noVNC asks for the `binary` subprotocol: the first one offered is answered.
  const protocol = request.headers['sec-websocket-protocol']?.split(',')[0]?.trim();
  socket.write(
    'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
      `Sec-WebSocket-Accept: ${accept}\r\n${protocol ? `Sec-WebSocket-Protocol: ${protocol}\r\n` : ''}\r\n`,
  );
  socket.setNoDelay(true);
  echo(socket, head);
});

/** A frame from the server: final, unmasked. */
function frame(opcode, payload) {
  const length = payload.length;
  const header =
    length < 126
      ? Buffer.from([0x80 | opcode, length])
      : length < 65536
        ? Buffer.from([0x80 | opcode, 126, length >> 8, length & 0xff])
        : Buffer.concat([Buffer.from([0x80 | opcode, 127]), bigEndian64(length)]);
  return Buffer.concat([header, payload]);
}

function bigEndian64(n) {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(n));
  return b;
}

/** Echoes every text or binary message back; answers pings; closes on close. */
function echo(socket, head) {
  let buffered = head.length ? Buffer.from(head) : Buffer.alloc(0);
  let closed = false;
  const close = (code) => {
    if (closed) return;
    closed = true;
    const payload = Buffer.alloc(2);
    payload.writeUInt16BE(code);
    socket.end(frame(0x8, payload));
  };
  const onData = (chunk) => {
    buffered = buffered.length ? Buffer.concat([buffered, chunk]) : chunk;
    while (!closed && buffered.length >= 2) {
      const fin = (buffered[0] & 0x80) !== 0;
      const opcode = buffered[0] & 0x0f;
      const masked = (buffered[1] & 0x80) !== 0;
      let length = buffered[1] & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (buffered.length < 4) return;
        length = buffered.readUInt16BE(2);
        offset = 4;
      } else if (length === 127) {
        if (buffered.length < 10) return;
        const long = buffered.readBigUInt64BE(2);
        length = long > BigInt(MAX_PAYLOAD) ? MAX_PAYLOAD + 1 : Number(long);
        offset = 10;
      }
      if (!masked) return close(1002); // a client must mask its frames
      if (length > MAX_PAYLOAD) return close(1009);
      if (!fin || opcode === 0x0) return close(1003); // fragmented messages: not needed by this test
      if (buffered.length < offset + 4 + length) return;
      const mask = buffered.subarray(offset, offset + 4);
      const payload = Buffer.from(buffered.subarray(offset + 4, offset + 4 + length));
      for (let i = 0; i < payload.length; i++) payload[i] ^= mask[i & 3];
      buffered = buffered.subarray(offset + 4 + length);
      if (opcode === 0x1 || opcode === 0x2) socket.write(frame(opcode, payload));
      else if (opcode === 0x9) socket.write(frame(0xa, payload));
      else if (opcode === 0x8) close(payload.length >= 2 ? payload.readUInt16BE(0) : 1000);
      else if (opcode !== 0xa) close(1002);
    }
  };
  socket.on('data', onData);
  socket.on('error', () => socket.destroy());
  if (buffered.length) onData(Buffer.alloc(0));
}

server.listen(PORT, '0.0.0.0', () => console.log(`workspace-test: listening on ${PORT}`));

// PID 1 in its container: without handlers SIGTERM would be ignored and `docker stop` would wait.
for (const signal of ['SIGTERM', 'SIGINT'])
  process.on(signal, () => {
    server.close();
    process.exit(0);
  });
