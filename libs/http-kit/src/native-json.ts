import type { FastifyReply } from 'fastify';

/**
 * Answers `value` with the native `JSON.stringify` instead of the route's response-schema
 * serialiser: the same bytes when `value` holds exactly the schema's properties, built property by
 * property in the schema's order, without the intermediate strings the schema's serialiser makes
 * for a large page (see tools/bench/README.md). Nothing drops an extra property any more, so every
 * route that uses it is held to its schema by a wire-exact test (`wireMismatches`).
 */
export function nativeJson<T>(reply: FastifyReply, value: T): T {
  reply.type('application/json; charset=utf-8').serializer(JSON.stringify);
  return value;
}
