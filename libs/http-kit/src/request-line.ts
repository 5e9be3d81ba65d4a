import type { IncomingMessage } from 'node:http';
import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import { redactUrl } from './redact-url';

/** Why a request was refused, for its request line (pretty mode only). */
const rejections = new WeakMap<IncomingMessage, string>();

/** Puts a refused request's detail on its one request line instead of a log entry of its own. */
export function noteRejection(request: { raw: IncomingMessage }, detail: string): void {
  rejections.set(request.raw, detail);
}

/** `GET /things?token=[REDACTED] 200 1.2 ms`, then why a refused request was refused. */
export function requestLine(request: FastifyRequest, status: number, elapsedMs: number): string {
  const detail = rejections.get(request.raw);
  return `${request.method} ${redactUrl(request.url)} ${status} ${elapsedMs.toFixed(1)} ms${detail ? ` — ${detail}` : ''}`;
}

/**
 * One log line per answered request (method, path with secret query parameters censored, status,
 * time, and why a refused request was refused), for people reading a terminal: instead of Fastify's
 * `incoming request` and `request completed` entries, each several lines once pretty-printed.
 * Written by the server's logger, without the request id binding, so it stays one line.
 */
export class OneLinePerRequest extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply) {
    const line = requestLine(request, reply.statusCode, reply.elapsedTime);
    if (error) request.server.log.error({ err: error }, line);
    else request.server.log.info(line);
  }
}
