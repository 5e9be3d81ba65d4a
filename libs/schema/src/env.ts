import type { TObject, Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

/**
 * Reads environment variables through a TypeBox schema: defaults applied, text converted to the
 * schema's types, and every problem reported at once (a service refuses to start on bad config).
 */
export function parseEnv<T extends TObject>(schema: T, env: Record<string, string | undefined>): Static<T> {
  const known = Object.fromEntries(
    Object.keys(schema.properties)
      .filter((key) => env[key] !== undefined && env[key] !== '')
      .map((key) => [
        key,
        (schema.properties[key] as { 'x-flag'?: boolean })['x-flag']
          ? env[key]!.trim().toLowerCase()
          : env[key],
      ]),
  );
  const value = Value.Convert(schema, Value.Default(schema, known));
  const problems = [...Value.Errors(schema, value)].map((e) => `${e.path.slice(1) || 'env'}: ${e.message}`);
  if (problems.length) throw new Error(`invalid configuration:\n  ${problems.join('\n  ')}`);
  return value as Static<T>;
}
