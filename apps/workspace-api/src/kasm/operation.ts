import { Type, type TProperties } from '@sinclair/typebox';
import { errorResponses, kasmDialect } from '@platform/http-kit';
import type { OperationAccess } from '../auth/permissions';

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
