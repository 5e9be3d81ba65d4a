import { Type, type TProperties, type TSchema } from '@sinclair/typebox';
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

/** Route options every Kasm operation shares: access rule, tag, error responses. */
export function operation(access: OperationAccess, tag: string, summary: string, description: string) {
  return {
    config: { access },
    schema: {
      tags: [tag],
      summary,
      description: `${description}\n\nPermission: **${access.permission === 'any' ? 'any valid key' : access.permission}**${access.writes ? ' (not with a read-only key)' : ''}.`,
      security: [{ apiKeyHeader: [], apiKeySecretHeader: [] }],
    },
    /** Kasm answers 400 (validation, unknown entities), 401 (permission), 403 (credentials). */
    errors: errorResponses(kasmDialect, [400, 401, 403, 413, 415, 500, 503]),
  };
}

export interface OperationSpec<B extends TSchema, R extends TSchema> {
  access: OperationAccess;
  summary: string;
  description: string;
  body: B;
  /** The success (200) answer. */
  response: R;
}

/**
 * The route options of one feature's `POST` operations (all under its tag): `operation`'s, with
 * the body and the success answer.
 */
export const operationsOf =
  (tag: string) =>
  <B extends TSchema, R extends TSchema>({
    access,
    summary,
    description,
    body,
    response,
  }: OperationSpec<B, R>) => {
    const op = operation(access, tag, summary, description);
    return { config: op.config, schema: { ...op.schema, body, response: { 200: response, ...op.errors } } };
  };
