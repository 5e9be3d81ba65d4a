import { MissingParameters } from '../errors';
import { parseId } from './kasm';

/*
 * How operations read their fields: present and `null` counts as absent, and a malformed id is
 * answered like one that names nothing.
 */

/** `undefined` for absent or null ("leave unchanged"), the value otherwise. */
export const given = <T>(value: T | null | undefined): T | undefined => (value === null ? undefined : value);

/** A string that names something: absent, null and blank strings do not. */
export const named = (value: string | null | undefined): string | undefined =>
  typeof value === 'string' && value.trim() !== '' ? value : undefined;

/** A required field: absent or null is `Missing` (by default `Invalid Request: Missing required parameters`). */
export function required<T>(value: T | null | undefined, Missing: new () => Error = MissingParameters): T {
  if (value === undefined || value === null) throw new Missing();
  return value;
}

/** A required name or id: absent, null and blank strings are `Missing` (see `required`). */
export const requiredNamed = (value: string | null | undefined, Missing?: new () => Error): string =>
  required(named(value), Missing);

/**
 * What a client's id names: `find` sees only well-formed ids (in the database's form); a malformed
 * id and one that names nothing (`find` answers undefined or false) are both `unknown()`.
 */
export async function lookup<T>(
  raw: string,
  find: (id: string) => Promise<T | undefined | false>,
  unknown: () => Error,
): Promise<T> {
  const id = parseId(raw);
  const found = id === undefined ? undefined : await find(id);
  if (found === undefined || found === false) throw unknown();
  return found;
}
