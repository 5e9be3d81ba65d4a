/**
 * Sending a hostile request over real HTTP, and what is wrong with the answer: every answer to a
 * request the service must refuse is a 4xx in the service's error dialect with its security headers.
 */
import { request as httpRequest, type Agent, type IncomingHttpHeaders } from 'node:http';
import { Value } from '@sinclair/typebox/value';
import type { TSchema } from '@sinclair/typebox';
import { BARE_SECURITY_HEADERS, type ErrorDialect } from '@platform/http-kit';
import type { HostileRequest } from './routes';

/** A response as the check sees it: status, lower-case headers, body text. */
export interface SeenResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * What is wrong with an answer to a request the service must refuse: not a 4xx, not in the
 * dialect's content type or body schema (with the status inside the body where the dialect carries
 * it), or without the security headers.
 */
export function errorResponseProblems(dialect: ErrorDialect, response: SeenResponse): string[] {
  const problems: string[] = [];
  if (response.status < 400 || response.status > 499) problems.push(`status ${response.status}, not a 4xx`);
  const contentType = String(response.headers['content-type'] ?? '');
  const media = (t: string) => t.toLowerCase().replace(/\s+/g, '');
  if (media(contentType) !== media(dialect.contentType))
    problems.push(`content-type "${contentType}", not "${dialect.contentType}"`);
  for (const name of Object.keys(BARE_SECURITY_HEADERS))
    if (response.headers[name] === undefined) problems.push(`no ${name} header`);
  if (
    response.headers['x-content-type-options'] !== undefined &&
    response.headers['x-content-type-options'] !== 'nosniff'
  )
    problems.push('x-content-type-options is not nosniff');
  let body: unknown;
  try {
    body = JSON.parse(response.body);
  } catch {
    problems.push('body is not JSON');
    return problems;
  }
  const schema = dialect.schemas.find((s) => s.$id === dialect.schemaRef) as TSchema | undefined;
  if (!schema) throw new Error(`the dialect has no schema ${dialect.schemaRef}`);
  if (!Value.Check(schema, dialect.schemas, body)) problems.push('body is not in the dialect');
  // The dialect's own answer to this status says where (if anywhere) the status sits in the body.
  const sample = dialect.body({ status: response.status, detail: '' }) as Record<string, unknown>;
  for (const [key, value] of Object.entries(sample))
    if (value === response.status && (body as Record<string, unknown>)[key] !== response.status)
      problems.push(`body.${key} is not ${response.status}`);
  return problems;
}

/** The problems of an answer, or of no answer at all. */
export const answerProblems = (dialect: ErrorDialect, seen: SeenResponse | Error) =>
  seen instanceof Error ? [`no answer: ${seen.message}`] : errorResponseProblems(dialect, seen);

/** Sends one request over a keep-alive agent; resolves with what came back or the transport error. */
function sendOnce(agent: Agent, base: URL, request: HostileRequest): Promise<SeenResponse | Error> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (value: SeenResponse | Error) => {
      if (!settled) {
        settled = true;
        resolve(value);
      }
    };
    let req;
    try {
      req = httpRequest({
        agent,
        host: base.hostname,
        port: base.port,
        method: request.method,
        path: request.url,
        headers: {
          ...request.headers,
          ...(request.body ? { 'content-length': String(request.body.length) } : {}),
        },
        timeout: 15_000,
      });
    } catch (error) {
      done(error as Error);
      return;
    }
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        done({
          status: res.statusCode ?? 0,
          headers: res.headers as IncomingHttpHeaders,
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      );
      res.on('error', (e) => done(e));
    });
    req.on('timeout', () => {
      req.destroy(new Error('no answer within 15 s'));
    });
    req.on('error', (e) => done(e));
    req.end(request.body);
  });
}

/**
 * Sends one request. A server may close a connection it answered with `connection: close` (an
 * oversized request) while the body is still going out; the answer then comes on a retry only.
 */
export async function send(agent: Agent, base: URL, request: HostileRequest): Promise<SeenResponse | Error> {
  const seen = await sendOnce(agent, base, request);
  if (seen instanceof Error && /ECONNRESET|EPIPE|socket hang up/.test(seen.message))
    return sendOnce(agent, base, request);
  return seen;
}

/** A request in one line: method, URL, headers, the start of the body (long parts cut). */
export const describeRequest = (r: HostileRequest) => {
  const body = r.body
    ? ` body(${r.body.length}B)=${JSON.stringify(r.body.subarray(0, 160).toString('utf8'))}`
    : '';
  const headers = Object.entries(r.headers)
    .map(([k, v]) => `${k}: ${v.length > 80 ? `${v.slice(0, 80)}…(${v.length})` : v}`)
    .join('; ');
  const url = r.url.length > 200 ? `${r.url.slice(0, 200)}…(${r.url.length})` : r.url;
  return `${r.method} ${url} [${headers}]${body}`;
};

/**
 * POSTs `body` as JSON to `url` over real HTTP (with `headers` besides the content type): how a
 * test shows the service still serves after a storm.
 */
export function postJson(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}
