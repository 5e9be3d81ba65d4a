/// <reference types="jest" />
/**
 * Every response a service's test receives, proven against the service's own OpenAPI document: each
 * Fastify app a test builds that documents itself (`app.swagger()`) has its responses checked by a
 * `DocumentValidator` as they leave, injected or over a real socket alike, and what the document does
 * not describe fails the test that received it.
 */
import { randomUUID } from 'node:crypto';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { parseRawResponse } from '../hostile/framing';
import { DocumentValidator, type ObservedResponse, type OpenApiDocument } from './validator';

/** A response the document does not describe. */
export interface Violation {
  /** `METHOD /url → status`. */
  response: string;
  problems: string[];
  /** The test running when it was answered (none in a `beforeAll`). */
  test?: string;
}

/** How many responses were proven, and how many were not the document's to prove. */
export interface ProofCounts {
  /** Checked against an operation of the document. */
  routed: number;
  /** Checked as answers before routing (the error dialect, the platform's statuses). */
  unrouted: number;
  /** Answered by routes the service hides from its document (Swagger UI, static files, CORS preflight). */
  hidden: number;
  /** Messages of event streams, read by the kit's `openEventStream`, checked against their stream's schema. */
  messages: number;
}

/** Validators by document, so the apps of a test file that share a document share compiled schemas. */
const validators = new Map<string, DocumentValidator>();
/** Each app's validator (its document is complete once it is ready). */
const validatorsOfApps = new WeakMap<FastifyInstance, DocumentValidator>();

/** The validator of an app's live document (`app.swagger()`, the one the committed file is written from). */
export function validatorOf(app: FastifyInstance): DocumentValidator {
  const known = validatorsOfApps.get(app);
  if (known) return known;
  const document = (app as unknown as { swagger(): OpenApiDocument }).swagger();
  const key = JSON.stringify(document);
  let validator = validators.get(key);
  if (!validator) {
    const dialect = app.errorDialect;
    if (!dialect) throw new Error('an app with an OpenAPI document but no error dialect');
    validator = new DocumentValidator(document, {
      error: { schema: dialect.schemaRef, mediaType: dialect.contentType.split(';')[0].trim().toLowerCase() },
    });
    validators.set(key, validator);
  }
  validatorsOfApps.set(app, validator);
  return validator;
}

/** The header block a response sent (`writeHead`'s headers included, which `getHeaders()` may miss). */
function sentHeaders(reply: FastifyReply): Record<string, string | string[]> {
  const raw = (reply.raw as unknown as { _header?: unknown })._header;
  if (typeof raw !== 'string') return reply.raw.getHeaders() as Record<string, string | string[]>;
  const headers: Record<string, string | string[]> = {};
  for (const line of raw.split('\r\n').slice(1)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    const before = headers[name];
    headers[name] = before === undefined ? value : [...[before].flat(), value];
  }
  return headers;
}

const isHidden = (request: FastifyRequest) => {
  const schema = request.routeOptions.schema as { hide?: boolean; tags?: string[] } | undefined;
  return schema?.hide === true || (schema?.tags ?? []).includes('X-HIDDEN');
};

type Report = (observed: ObservedResponse, problems: string[], kind: keyof ProofCounts) => void;

/** Judges `observed` by `app`'s document (when it has one) and reports it. */
function judge(app: FastifyInstance, observed: ObservedResponse, report: Report) {
  let problems: string[];
  try {
    problems = validatorOf(app).problems(observed);
  } catch (error) {
    problems = [`the validator failed: ${(error as Error).message}`];
  }
  report(observed, problems, observed.route === undefined ? 'unrouted' : 'routed');
}

const documented = (app: FastifyInstance) => typeof (app as { swagger?: unknown }).swagger === 'function';

/**
 * The answers written straight on a socket, where no hook runs (http-kit's answers to malformed HTTP,
 * to a request not received in time, to CONNECT): the first complete response written after the
 * server's `event`, judged as an answer made before routing.
 */
function proveRawAnswers(app: FastifyInstance, event: 'clientError' | 'connect', report: Report) {
  app.server.prependListener(event, (first: unknown, second: unknown) => {
    // (error, socket) and (request, socket, head)
    const socket = second as Socket;
    const request = event === 'connect' ? (first as IncomingMessage) : undefined;
    const { write, end } = socket;
    let judged = false;
    const inspect = (chunk: unknown) => {
      if (judged || !documented(app) || (typeof chunk !== 'string' && !Buffer.isBuffer(chunk))) return;
      const text = chunk.toString();
      if (!/^HTTP\/1\.[01] \d{3} /.test(text) || !text.includes('\r\n\r\n')) return;
      judged = true;
      const parsed = parseRawResponse(text);
      const observed = { method: request?.method ?? '(malformed)', url: request?.url ?? '', ...parsed };
      judge(app, observed, report);
    };
    socket.write = function (this: Socket, chunk: unknown, ...rest: unknown[]) {
      inspect(chunk);
      return (write as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
    } as Socket['write'];
    socket.end = function (this: Socket, chunk?: unknown, ...rest: unknown[]) {
      inspect(chunk);
      return (end as (...args: unknown[]) => Socket).call(this, chunk, ...rest);
    } as Socket['end'];
  });
}

/**
 * Adds the hooks that prove `app`'s responses (before it is ready: at its creation): the body is
 * taken as it is sent (`onSend`), the response judged once it is complete (`onResponse`: its final
 * status and headers, and the event streams, whose replies are taken over and skip `onSend`); the
 * answers written on a socket before Fastify has a request are judged as they are written.
 * Apps without an OpenAPI document (a test's fake provider) are left alone.
 */
export function proveResponsesOf(app: FastifyInstance, report: Report): void {
  proveRawAnswers(app, 'clientError', report);
  proveRawAnswers(app, 'connect', report);
  const bodies = new WeakMap<FastifyRequest, string | Buffer | undefined>();
  app.addHook('onSend', (request, _reply, payload, done) => {
    bodies.set(
      request,
      typeof payload === 'string' || Buffer.isBuffer(payload)
        ? payload
        : payload === null || payload === undefined
          ? ''
          : undefined,
    );
    done(null, payload);
  });
  app.addHook('onResponse', (request, reply, done) => {
    // A response nobody received (the client left before it was sent) is not judged.
    if (!documented(app) || !reply.raw.headersSent) return done();
    if (isHidden(request)) {
      report(observedOf(request, reply, undefined), [], 'hidden');
      return done();
    }
    const routed = !request.is404 && request.routeOptions.url !== undefined;
    const observed = observedOf(request, reply, routed ? request.routeOptions.url : undefined);
    observed.body = bodies.has(request) ? bodies.get(request) : undefined;
    judge(app, observed, report);
    done();
  });
}

const observedOf = (
  request: FastifyRequest,
  reply: FastifyReply,
  route: string | undefined,
): ObservedResponse => ({
  method: request.method,
  url: request.url,
  route,
  status: reply.raw.statusCode,
  headers: sentHeaders(reply),
});

export interface ResponseProof {
  counts: ProofCounts;
  /** The violations not yet thrown. */
  violations: Violation[];
  /** Throws the violations recorded so far (and forgets them), naming each response and test. */
  assertDocumented(): void;
  /** Stops watching new apps. */
  stop(): void;
}

type StreamWatcher = (url: string, message: { id?: string; event?: string; data: string }) => void;
const streamWatchers = new Set<StreamWatcher>();

/**
 * Proves one message a test read from an event stream at `url` (the kit's `openEventStream` calls it)
 * against the stream's documented messages, when a running proof knows the app listening there: the
 * hub writes events on the sockets below any hook, so they are checked where they are read.
 */
export function proveStreamMessage(
  url: string,
  message: { id?: string; event?: string; data: string },
): void {
  for (const watch of streamWatchers) watch(url, message);
}

/** Shown of a long URL in a violation. */
const shortUrl = (url: string) => (url.length > 160 ? `${url.slice(0, 160)}…(${url.length})` : url);

/**
 * The proofs of the services' own processes that tests start (`childProcessEnv`): each child writes
 * its violations as they happen, and its counts when it exits, to its file here, as JSON lines
 * (`{"violation": …}`, `{"counts": …}`); the running proof reads them.
 */
const childLogs = new Map<string, { offset: number }>();

/** A new file for a child process's proof, read by the proof of this process from now on. */
export function childProofLog(): string {
  const file = join(tmpdir(), `proven-responses-${process.pid}-${randomUUID()}.jsonl`);
  writeFileSync(file, '');
  childLogs.set(file, { offset: 0 });
  return file;
}

/** The lines the children wrote since the last read. */
function readChildLogs(): Array<{ violation?: Violation; counts?: ProofCounts }> {
  const lines: Array<{ violation?: Violation; counts?: ProofCounts }> = [];
  for (const [file, position] of childLogs) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    // Only whole lines: a child may be writing the next one.
    const end = text.lastIndexOf('\n') + 1;
    if (end <= position.offset) continue;
    for (const line of text.slice(position.offset, end).split('\n'))
      if (line) lines.push(JSON.parse(line) as { violation?: Violation; counts?: ProofCounts });
    position.offset = end;
  }
  return lines;
}

/**
 * Proves the responses of every Fastify app created from now on in this process (Fastify publishes
 * each new instance on the `fastify.initialization` diagnostics channel), until `stop`, and gathers
 * the proofs of the children started with `childProcessEnv`. `onViolation` takes each violation as
 * it is found instead of keeping it (a child process's proof).
 */
export function proveResponses(onViolation?: (violation: Violation) => void): ResponseProof {
  const counts: ProofCounts = { routed: 0, unrouted: 0, hidden: 0, messages: 0 };
  const violations: Violation[] = [];
  const apps = new Set<FastifyInstance>();
  const currentTest = () => (typeof expect === 'function' ? expect.getState().currentTestName : undefined);
  const record = (response: string, problems: string[]) => {
    if (!problems.length) return;
    const test = currentTest();
    const violation = { response, problems, ...(test ? { test } : {}) };
    if (onViolation) onViolation(violation);
    else violations.push(violation);
  };
  // A child's violation belongs to the test running when it is read (the one that started the child
  // or received the answer, or the next when the child wrote it late).
  const gatherChildren = () => {
    const test = currentTest();
    for (const line of readChildLogs()) {
      if (line.violation)
        violations.push({
          ...line.violation,
          response: `${line.violation.response} (a child process)`,
          ...(test ? { test } : {}),
        });
      if (line.counts)
        for (const kind of Object.keys(counts) as Array<keyof ProofCounts>)
          counts[kind] += line.counts[kind] ?? 0;
    }
  };
  const onInstance = (message: unknown) => {
    const app = (message as { fastify: FastifyInstance }).fastify;
    apps.add(app);
    app.addHook('onClose', async () => void apps.delete(app));
    proveResponsesOf(app, (observed, problems, kind) => {
      counts[kind]++;
      record(`${observed.method} ${shortUrl(observed.url)} → ${observed.status}`, problems);
    });
  };
  const streams: StreamWatcher = (url, message) => {
    const { port, pathname } = new URL(url);
    const app = [...apps].find((a) => {
      const address = a.server.listening ? a.server.address() : null;
      return typeof address === 'object' && address !== null && String(address.port) === port;
    });
    if (!app || !documented(app)) return;
    counts.messages++;
    let problems: string[];
    try {
      problems = validatorOf(app).messageProblems(pathname, message);
    } catch (error) {
      problems = [`the validator failed: ${(error as Error).message}`];
    }
    record(`GET ${shortUrl(url)} (a message of its stream)`, problems);
  };
  subscribe('fastify.initialization', onInstance);
  streamWatchers.add(streams);
  return {
    counts,
    violations,
    assertDocumented() {
      gatherChildren();
      if (!violations.length) return;
      const found = violations.splice(0);
      throw new Error(
        `${found.length} response(s) the service's OpenAPI document does not describe:\n` +
          found
            .slice(0, 20)
            .map(
              (v) =>
                `- ${v.response}${v.test ? '' : ' (answered outside any test)'}\n    ${v.problems.join('\n    ')}`,
            )
            .join('\n') +
          (found.length > 20 ? `\n… and ${found.length - 20} more` : ''),
      );
    },
    stop() {
      gatherChildren();
      for (const file of childLogs.keys()) rmSync(file, { force: true });
      childLogs.clear();
      unsubscribe('fastify.initialization', onInstance);
      streamWatchers.delete(streams);
      apps.clear();
    },
  };
}
