import type { FastifyInstance, FastifyPluginAsync, FastifyRequest, RouteShorthandOptions } from 'fastify';
import { Type, type Static, type TProperties, type TSchema } from '@sinclair/typebox';
import { errorResponses } from '@platform/http-kit';
import type { OperationAccess } from '../auth/permissions';
import { kasmDialect } from '../errors';

/** Credentials every operation accepts in its body (the `api-key`/`api-key-secret` headers win). */
const Credentials = {
  api_key: Type.Optional(Type.String({ description: 'API key (or header `api-key`)' })),
  api_key_secret: Type.Optional(Type.String({ description: 'API key secret (or header `api-key-secret`)' })),
};

/**
 * A Kasm operation's body: its own fields plus the credentials; unknown fields are ignored.
 * Nested targets are declared loosely (types only) so that each operation answers a missing
 * field with Kasm's own message.
 */
export const OperationBody = <T extends TProperties>(properties: T = {} as T, description?: string) =>
  Type.Object({ ...Credentials, ...properties }, { description });

/** The answer of an operation that only says it is done: `{}`. */
export const EmptyResponse = (description: string) => Type.Object({}, { description });

/** The documentation of an access rule: `Permission: **…**` and what else it takes. */
function permissionLine(access: OperationAccess): string {
  const permission = access.permission === 'any' ? 'any valid key' : access.permission;
  const or = access.orPermission ? ` (or **${access.orPermission}**, for any user\u2019s session)` : '';
  const acting = access.actsForUser
    ? '; acting for a user (`user_id`) also takes **Users Auth Session**'
    : '';
  const readOnly = access.writes ? ' (not with a read-only key)' : '';
  return `Permission: **${permission}**${or}${acting}${readOnly}.`;
}

/** Route options every Kasm operation shares: access rule, tag, error responses. */
export function operation(access: OperationAccess, tag: string, summary: string, description: string) {
  return {
    config: { access },
    schema: {
      tags: [tag],
      summary,
      description: `${description}\n\n${permissionLine(access)}`,
      security: [{ apiKeyHeader: [], apiKeySecretHeader: [] }],
    },
    /** Kasm answers 400 (validation, unknown entities), 401 (permission), 403 (credentials); 500 and 503 are the platform's. */
    errors: errorResponses(kasmDialect, [400, 401, 403, 413, 415]),
  };
}

/** One Kasm operation: `POST /api/public/<name>`, its documentation and rule, and its answer. */
export interface KasmOperation<B extends TSchema, R extends TSchema, S> {
  /** The path under `/api/public/`, as Kasm clients call it. */
  name: string;
  access: OperationAccess;
  summary: string;
  description: string;
  body: B;
  /** The success (200) answer. */
  response: R;
  /**
   * Answers a body that passed `body`'s schema, with the feature's service; a Kasm error thrown is
   * answered in the Kasm dialect. `request` carries what the auth hook found (`apiKey`,
   * `actingUser`) for operations whose answer depends on who asks.
   */
  answer(body: Static<B>, service: S, request: FastifyRequest): Promise<Static<R>>;
}

/**
 * One feature's operations, all under its tag and answered by one service: `add` declares each,
 * `plugin` registers them (in that order) as `POST /<name>` with `operation`'s route options, the
 * body and the success answer.
 */
export function operationsOf<S>(tag: string, createService: (app: FastifyInstance) => S) {
  const operations: KasmOperation<TSchema, TSchema, S>[] = [];
  const plugin: FastifyPluginAsync = async (app) => {
    const service = createService(app);
    for (const { name, access, summary, description, body, response, answer } of operations) {
      const op = operation(access, tag, summary, description);
      const options: RouteShorthandOptions = {
        config: op.config,
        schema: { ...op.schema, body, response: { 200: response, ...op.errors } },
      };
      app.post(`/${name}`, options, (request) => answer(request.body, service, request));
    }
  };
  return {
    add<B extends TSchema, R extends TSchema>(op: KasmOperation<B, R, S>) {
      operations.push(op);
    },
    plugin,
  };
}

/** The answer of an operation that answers `{}` once `act` is done. */
export const answerEmpty =
  <B, S>(act: (body: B, service: S, request: FastifyRequest) => Promise<unknown>) =>
  async (body: B, service: S, request: FastifyRequest): Promise<Record<string, never>> => {
    await act(body, service, request);
    return {};
  };
