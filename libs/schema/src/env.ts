import { Type, type TObject, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { ENV_FLAG } from './annotations';

/** The words a flag may be written with, any case (as the services' predecessors read them). */
const FLAG_WORDS: Record<string, boolean> = {
  yes: true,
  on: true,
  true: true,
  '1': true,
  no: false,
  off: false,
  false: false,
  '0': false,
};

/**
 * A boolean variable, written yes/no, on/off, true/false or 1/0 in any case (an empty value means the
 * default); `parseEnv` turns it into a `boolean`.
 */
export const EnvFlag = (fallback: boolean, description?: string) =>
  Type.Boolean({ default: fallback, description, [ENV_FLAG]: true });

/**
 * Reads environment variables through a TypeBox schema: defaults applied, text converted to the
 * schema's types (flags to booleans), and every problem reported at once (a service refuses to start
 * on bad config).
 */
export function parseEnv<T extends TObject>(schema: T, env: Record<string, string | undefined>): Static<T> {
  const known = Object.fromEntries(
    Object.keys(schema.properties)
      .filter((key) => env[key] !== undefined && env[key] !== '')
      .map((key) => {
        const text = env[key]!;
        const isFlag = (schema.properties[key] as Record<string, unknown>)[ENV_FLAG] === true;
        // An unknown word stays text, so validation names the variable.
        return [key, isFlag ? (FLAG_WORDS[text.trim().toLowerCase()] ?? text) : text];
      }),
  );
  const value = Value.Convert(schema, Value.Default(schema, known));
  const problems = [...Value.Errors(schema, value)].map((e) => `${e.path.slice(1) || 'env'}: ${e.message}`);
  if (problems.length) throw new Error(`invalid configuration:\n  ${problems.join('\n  ')}`);
  return value as Static<T>;
}
