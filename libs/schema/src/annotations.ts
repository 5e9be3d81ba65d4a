/**
 * The keys our schemas carry beyond JSON Schema, each read by one mechanism. Declared here only, so a
 * reader finds every private key and its reader in one place, and code never spells them as strings.
 */

/**
 * On a body property (or a branch of its union): the string is trimmed before validation counts its
 * characters. Set by `TrimmedText`; read by http-kit's request rules when a service turns trimming on.
 */
export const TRIM = 'x-trim';

/**
 * On any schema: the one message (after the field name) for any way the value can fail, instead of
 * Ajv's wording or a union's branch noise. Set by `TrimmedText` and `withMessage`; read by the error
 * dialects' wording of validation failures.
 */
export const VALIDATION_MESSAGE = 'x-error-message';

/**
 * On an environment variable's schema: the value is a yes/no flag, read by `parseEnv` whatever its
 * case. Set by `EnvFlag`.
 */
export const ENV_FLAG = 'x-flag';

/** Annotation keywords route schemas may carry; each app's Ajv instances must know them. */
export const annotationKeywords = [TRIM, VALIDATION_MESSAGE] as const;

/** The `VALIDATION_MESSAGE` annotation of a schema, when it has one. */
export const validationMessageOf = (schema: Record<string, unknown> | undefined): string | undefined => {
  const message = schema?.[VALIDATION_MESSAGE];
  return typeof message === 'string' ? message : undefined;
};
