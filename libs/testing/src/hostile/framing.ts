/**
 * Malformed HTTP framing on raw sockets: requests Node's HTTP parser must refuse before any route
 * (smuggling-prone framing, broken chunking, oversized or invalid headers), each kind a fast-check
 * arbitrary of its variants, so a failure shrinks like any other.
 */
import { createConnection } from 'node:net';
import fc from 'fast-check';

/** Sends `raw` on a fresh connection; resolves with all it received once the server closes it. */
export function rawExchange(port: number, raw: string | string[], timeoutMs = 10_000) {
  const socket = createConnection({ port, host: '127.0.0.1' });
  let received = '';
  socket.on('data', (chunk) => (received += chunk));
  socket.on('error', () => undefined);
  const timer = setTimeout(() => socket.destroy(), timeoutMs);
  const closed = new Promise<string>((resolve) =>
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(received);
    }),
  );
  for (const part of [raw].flat()) socket.write(part);
  return { socket, closed };
}

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** The status, lower-case headers and body of a raw HTTP/1.1 answer (Content-Length framed). */
export function parseRawResponse(raw: string): RawResponse {
  const [head, ...rest] = raw.split('\r\n\r\n');
  const [statusLine, ...lines] = head.split('\r\n');
  return {
    status: Number(statusLine.split(' ')[1]),
    headers: Object.fromEntries(
      lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
    ),
    body: rest.join('\r\n\r\n'),
  };
}

/** Sends raw framing to a server on 127.0.0.1 and reads its answer (an Error when none came). */
export async function rawAnswer(port: number, raw: string): Promise<RawResponse | Error> {
  const seen = await rawExchange(port, raw).closed;
  return seen ? parseRawResponse(seen) : new Error('connection closed without an answer');
}

/** One kind of malformed framing, and its variants for a route. */
export interface FramingCase {
  name: string;
  arbitrary: fc.Arbitrary<string>;
}

const letters = (min: number, max: number) =>
  fc.string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz'), minLength: min, maxLength: max });
/** Control characters Node refuses in a header value (all but HTAB; CR, LF end the line). */
const CONTROLS = [...Array(32).keys()]
  .filter((c) => ![9, 10, 13].includes(c))
  .map((c) => String.fromCharCode(c));

/**
 * Requests Node's HTTP parser refuses before any route, for `method path`, each kind with variants
 * (lengths, digits, characters): each must be a 4xx in the dialect.
 */
export function malformedFraming(method: string, path: string): FramingCase[] {
  const line = `${method} ${path} HTTP/1.1\r\nHost: x\r\n`;
  const json = 'Content-Type: application/json\r\n';
  const chunked = 'Transfer-Encoding: chunked\r\n\r\n';
  const framing = <T>(
    name: string,
    arbitrary: fc.Arbitrary<T>,
    request: (drawn: T) => string,
  ): FramingCase => ({
    name,
    arbitrary: arbitrary.map(request),
  });
  return [
    framing(
      'duplicate Content-Length',
      fc.tuple(fc.nat(99), fc.nat(99)).filter(([a, b]) => a !== b),
      ([a, b]) => `${line}${json}Content-Length: ${a}\r\nContent-Length: ${b}\r\n\r\n{}`,
    ),
    framing(
      'Content-Length with Transfer-Encoding',
      fc.nat(99),
      (n) => `${line}${json}Content-Length: ${n}\r\n${chunked}0\r\n\r\n`,
    ),
    framing(
      'bad chunk size',
      fc.tuple(
        fc.constantFrom(...'GZgz@-+'),
        fc.string({ unit: fc.constantFrom(...'0123456789ABCDEF'), maxLength: 3 }),
      ),
      ([bad, digits]) => `${line}${json}${chunked}${bad}${digits}\r\n{}\r\n0\r\n\r\n`,
    ),
    framing(
      'overflowing chunk size',
      fc.string({ unit: fc.constantFrom(...'123456789ABCDEFabcdef'), minLength: 17, maxLength: 40 }),
      (digits) => `${line}${json}${chunked}${digits}\r\n{}\r\n0\r\n\r\n`,
    ),
    framing(
      'negative Content-Length',
      fc.integer({ min: 1, max: 999_999 }),
      (n) => `${line}${json}Content-Length: -${n}\r\n\r\n{}`,
    ),
    framing(
      'non-numeric Content-Length',
      fc.tuple(fc.nat(99), fc.string({ unit: fc.constantFrom(...'xaZ/'), minLength: 1, maxLength: 3 })),
      ([n, junk]) => `${line}${json}Content-Length: ${n}${junk}\r\n\r\n{}`,
    ),
    framing(
      'headers over 16 KB',
      fc.integer({ min: 16 * 1024, max: 24 * 1024 }),
      (n) => `${line}X-Big: ${'a'.repeat(n)}\r\n\r\n`,
    ),
    framing(
      'space in a header name',
      fc.tuple(letters(1, 8), letters(1, 8)),
      ([a, b]) => `${line}${a} ${b}: 1\r\n\r\n`,
    ),
    framing(
      'control character in a header value',
      fc.tuple(letters(0, 4), fc.constantFrom(...CONTROLS), letters(0, 4)),
      ([a, control, b]) => `${line}X-Ctl: ${a}${control}${b}\r\n\r\n`,
    ),
    framing(
      'space in the request target',
      letters(1, 8),
      (extra) => `${method} ${path} ${extra} HTTP/1.1\r\nHost: x\r\n\r\n`,
    ),
    framing(
      'unknown HTTP version',
      fc.tuple(fc.integer({ min: 3, max: 9 }), fc.integer({ min: 0, max: 9 })),
      ([major, minor]) => `${method} ${path} HTTP/${major}.${minor}\r\nHost: x\r\n\r\n`,
    ),
  ];
}
