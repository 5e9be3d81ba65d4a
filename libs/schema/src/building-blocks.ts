import { Type, type Static, type TSchema, type SchemaOptions, type TUnsafe } from '@sinclair/typebox';
import { VALIDATION_MESSAGE, TRIM } from './annotations';

/**
 * The ranges an integer parameter can be checked against before it reaches SQL: PostgreSQL's
 * `integer` (int4) and the integers a JavaScript number holds exactly. A `bigint` column's values
 * pass through JavaScript numbers in our services, so its parameters stop at the safe range (2^53 - 1),
 * well inside int8: a larger value would already have been rounded before the query.
 */
export const INT32 = { min: -2147483648, max: 2147483647 } as const;
export const SAFE_INTEGER = { min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER } as const;

/** The largest id a Postgres `integer` identity column can hold. */
export const MAX_ID = INT32.max;

type IntegerOptions = SchemaOptions & { minimum?: number; maximum?: number };

/**
 * An integer within `range` (narrowed by `minimum`/`maximum`), the bounds always written into the
 * schema, so validation, the OpenAPI document and the hostile storm all see them. A bound outside the
 * range is a programming error: it would let a value through that the column refuses with a 500.
 */
function boundedInteger(range: { min: number; max: number }, name: string, options: IntegerOptions) {
  const { minimum = range.min, maximum = range.max } = options;
  if (!(minimum >= range.min && maximum <= range.max && minimum <= maximum))
    throw new RangeError(`${name}: bounds ${minimum}..${maximum} are outside ${range.min}..${range.max}`);
  return Type.Integer({ ...options, minimum, maximum });
}

/** An integer a Postgres `integer` (int4) column or parameter holds: -2^31..2^31-1 unless narrowed. */
export const Int32 = (options: IntegerOptions = {}) => boundedInteger(INT32, 'Int32', options);

/**
 * An integer JavaScript holds exactly: ±(2^53 - 1) unless narrowed. For counts and page numbers that
 * never reach SQL as such, and for `bigint` columns (see `SAFE_INTEGER`).
 */
export const SafeInteger = (options: IntegerOptions = {}) =>
  boundedInteger(SAFE_INTEGER, 'SafeInteger', options);

/** A positive database id (an `integer` identity column), serialised as a JSON number. */
export const Id = (options: SchemaOptions = {}) => Int32({ minimum: 1, ...options });

/**
 * Items to skip in a collection: 0..2^31-1. A collection of rows keyed by `integer` ids never holds
 * more, so a larger offset is always past its end, and it is refused before SQL compares it with an
 * `integer` total.
 */
export const PageOffset = (options: IntegerOptions = {}) => Int32({ minimum: 0, ...options });

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
) => Int32({ minimum: bounds.min ?? 1, maximum: bounds.max, default: bounds.default, ...options });

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
