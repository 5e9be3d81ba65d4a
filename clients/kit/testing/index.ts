/**
 * What the clients' contract tests share (not part of the published package): the document's
 * operations, a fetch that records which of them the client called and which statuses they answered
 * (and flags a response the document does not describe), and a browser-like cookie jar for fetch.
 */

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseServerSentEvents, type ServerSentEvent } from '../src/server-sent-events.js';

interface Responses {
  responses?: Record<string, { content?: Record<string, unknown> }>;
}

/** The parts of an OpenAPI document read here. */
export interface Document {
  paths: Record<string, Record<string, Responses>>;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];

/** Every operation of the document as `METHOD /path/{param}`. */
export function operationsOf(document: Document): string[] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((method) => METHODS.includes(method))
      .map((method) => `${method.toUpperCase()} ${path}`),
  );
}

/** One response a client received, by the document's operation. */
export interface RecordedCall {
  operation: string;
  status: number;
  contentType: string | undefined;
}

export interface Recorder {
  /** Give this to the client (`fetch` option): it calls the real `fetch` and records. */
  fetch: (input: Request) => Promise<Response>;
  calls: RecordedCall[];
  /** Operations of the document not called yet. */
  uncalled(): string[];
  /** Operations that list a 4xx status and were never answered one. */
  withoutClientError(): string[];
  /** Responses whose status (or content type) the document does not list for their operation. */
  undocumented(): string[];
}

/** Matches a request to the document's operation (`/api/users/{id}` for `/api/users/7`). */
function matcher(document: Document) {
  const templates = Object.keys(document.paths).map((path) => ({
    path,
    // Literal segments first: `/api/me/following` before `/api/users/{id}`-like templates.
    literal: !path.includes('{'),
    pattern: new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
  }));
  templates.sort((a, b) => Number(b.literal) - Number(a.literal));
  return (method: string, pathname: string) => {
    const found = templates.find(
      (t) => t.pattern.test(pathname) && document.paths[t.path][method.toLowerCase()],
    );
    return found ? `${method.toUpperCase()} ${found.path}` : undefined;
  };
}

/** A message of an event stream the client read, with the stream's URL. */
export type StreamMessageWatcher = (url: string, message: ServerSentEvent) => void;

/**
 * `onStreamMessage` is given every message of every event stream the client receives, as the client
 * reads it (the body is teed): the contract tests prove each against the document's stream schema.
 */
export function recorder(
  document: Document,
  inner: (input: Request) => Promise<Response> = (r) => fetch(r),
  onStreamMessage?: StreamMessageWatcher,
): Recorder {
  const match = matcher(document);
  const calls: RecordedCall[] = [];
  const strays: string[] = [];
  return {
    calls,
    async fetch(request) {
      let response = await inner(request);
      if (
        onStreamMessage &&
        response.body &&
        response.headers.get('content-type')?.startsWith('text/event-stream')
      ) {
        const [client, watched] = response.body.tee();
        response = new Response(client, response);
        void (async () => {
          try {
            for await (const message of parseServerSentEvents(watched)) onStreamMessage(request.url, message);
          } catch {
            // The stream ended under the client (aborted, dropped): what was read was proven.
          }
        })();
      }
      const pathname = new URL(request.url).pathname;
      const operation = match(request.method, pathname);
      if (!operation) strays.push(`${request.method} ${pathname}: no such operation in the document`);
      else
        calls.push({
          operation,
          status: response.status,
          contentType: response.headers.get('content-type')?.split(';')[0].trim() || undefined,
        });
      return response;
    },
    uncalled: () => operationsOf(document).filter((op) => !calls.some((call) => call.operation === op)),
    withoutClientError: () =>
      operationsOf(document).filter((op) => {
        const [method, path] = op.split(' ');
        const statuses = Object.keys(document.paths[path][method.toLowerCase()].responses ?? {});
        return (
          statuses.some((status) => /^4\d\d$/.test(status)) &&
          !calls.some((call) => call.operation === op && call.status >= 400 && call.status < 500)
        );
      }),
    undocumented: () => [
      ...strays,
      ...calls.flatMap((call) => {
        const [method, path] = call.operation.split(' ');
        const response = document.paths[path][method.toLowerCase()].responses?.[String(call.status)];
        if (!response) return [`${call.operation} answered ${call.status}, a status it does not document`];
        const types = Object.keys(response.content ?? {});
        if (call.contentType && types.length && !types.includes(call.contentType))
          return [
            `${call.operation} ${call.status} answered ${call.contentType}, documented: ${types.join(', ')}`,
          ];
        return [];
      }),
    ],
  };
}

/**
 * A browser's cookie handling for fetch under Node (whose fetch keeps no cookies): remembers what
 * `Set-Cookie` sets (name, value, `Path`, `Max-Age`/`Expires` in the past deletes) and sends the
 * cookies whose path matches; requests with `credentials: 'omit'` get none.
 */
export function cookieJar(inner: (input: Request) => Promise<Response> = (r) => fetch(r)) {
  const cookies = new Map<string, { value: string; path: string }>();
  return {
    cookies,
    async fetch(request: Request): Promise<Response> {
      const url = new URL(request.url);
      const headers = new Headers(request.headers);
      const sent = [...cookies]
        .filter(
          ([, c]) =>
            url.pathname === c.path || url.pathname.startsWith(c.path.endsWith('/') ? c.path : `${c.path}/`),
        )
        .map(([name, c]) => `${name}=${c.value}`);
      if (sent.length && request.credentials !== 'omit') headers.set('cookie', sent.join('; '));
      const response = await inner(new Request(request, { headers }));
      for (const line of response.headers.getSetCookie()) {
        const [pair, ...attributes] = line.split(';').map((part) => part.trim());
        const eq = pair.indexOf('=');
        const name = pair.slice(0, eq);
        const value = pair.slice(eq + 1);
        const attribute = (key: string) =>
          attributes.find((a) => a.toLowerCase().startsWith(`${key}=`))?.slice(key.length + 1);
        const maxAge = attribute('max-age');
        const expires = attribute('expires');
        const expired =
          (maxAge !== undefined && Number(maxAge) <= 0) ||
          (expires !== undefined && Date.parse(expires) <= Date.now());
        if (expired || value === '') cookies.delete(name);
        else cookies.set(name, { value, path: attribute('path') ?? '/' });
      }
      return response;
    },
  };
}
export * from './consumer.js';

/** The committed OpenAPI document of a service (`apps/<service>/openapi.json`), the clients' source. */
export function committedDocument(service: string): Document {
  const file = join(__dirname, '..', '..', '..', 'apps', service, 'openapi.json');
  return JSON.parse(readFileSync(file, 'utf8')) as Document;
}

/**
 * The last tests of a client's contract suite, after every other has called the service through
 * `recorded()`'s fetch: each operation of the document was called, each that documents a 4xx
 * answered one, and each response was one the document describes.
 */
export function documentProvenByClient(recorded: () => Recorder): void {
  describe('the document, proven by the client', () => {
    test('every operation of the document was called through the client', () => {
      expect(recorded().uncalled()).toEqual([]);
    });

    test('every operation that documents a 4xx answered one', () => {
      expect(recorded().withoutClientError()).toEqual([]);
    });

    test('every response was one the document describes (status and content type)', () => {
      expect(recorded().undocumented()).toEqual([]);
    });
  });
}
