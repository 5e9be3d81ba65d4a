import { Type, type Static, type TSchema, type SchemaOptions, type TUnsafe } from '@sinclair/typebox';
import { VALIDATION_MESSAGE, TRIM } from './annotations';

/** The largest id a Postgres `integer` identity column can hold. */
export const MAX_ID = 2147483647;

/** A positive database id, serialised as a JSON number. */
export const Id = (options: SchemaOptions = {}) => Type.Integer({ minimum: 1, maximum: MAX_ID, ...options });

/** ISO 8601 UTC date-time with milliseconds and `Z` (what `Date#toISOString()` produces). */
export const IsoTimestamp = (options: SchemaOptions = {}) =>
  Type.String({ format: 'date-time', examples: ['2026-11-22T09:15:00.123Z'], ...options });

/**
 * A closed set of strings as a JSON Schema `enum` (TypeBox's literal unions become `anyOf`,
 * which gives worse validation messages and a worse OpenAPI rendering).
 */
export const StringEnum = <const T extends readonly string[]>(
  values: T,
  options: SchemaOptions = {},
): TUnsafe<T[number]> => Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });

/** A page-size query parameter. */
export const PageLimit = (
  bounds: { min?: number; max: number; default: number },
  options: SchemaOptions = {},
) => Type.Integer({ minimum: bounds.min ?? 1, maximum: bounds.max, default: bounds.default, ...options });

/**
 * Text that the server trims before validating (the `TRIM` annotation, applied by http-kit's request
 * rules when the service trims); `minLength`/`maxLength` count characters (code points) after trimming.
 */
export const TrimmedText = (bounds: { min: number; max: number }, options: SchemaOptions = {}) =>
  Type.String({
    minLength: bounds.min,
    maxLength: bounds.max,
    [TRIM]: true,
    [VALIDATION_MESSAGE]: `must be ${bounds.min}..${bounds.max} characters`,
    ...options,
  });

/**
 * Gives a value one validation message (after the field name) for any way it can fail, e.g. a union
 * whose branch errors would be noise (the `VALIDATION_MESSAGE` annotation, read by the error dialects).
 */
export const withMessage = <T extends TSchema>(schema: T, message: string): T => ({
  ...schema,
  [VALIDATION_MESSAGE]: message,
});

/** A copy of a schema with other options (a description, a default), keeping its TypeScript type. */
export const annotate = <T extends TSchema>(schema: T, options: SchemaOptions): T => ({
  ...schema,
  ...options,
});

/**
 * A value that may also be JSON `null` (OpenAPI `nullable`, which Ajv understands), keeping
 * validation messages about the real type ("must be a boolean") instead of union noise.
 */
export const Nullable = <T extends TSchema>(schema: T): TUnsafe<Static<T> | null> =>
  Type.Unsafe<Static<T> | null>({ ...schema, nullable: true });
