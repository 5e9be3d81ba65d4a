import { Type } from '@sinclair/typebox';

/** Kasm writes UUIDs as 32 lowercase hex characters; input may also be dashed. */
export const KasmId = Type.String({
  pattern: '^[0-9a-f]{32}$',
  description: 'UUID as 32 lowercase hex characters',
  examples: ['68d557ac4cac42cca9f31c7c853de0f3'],
});
/** An id as clients send it: any string (malformed ids are answered like unknown ones). */
export const IdInput = Type.String({ description: 'UUID, 32 hex characters or dashed' });
/** `YYYY-MM-DD HH:MM:SS.ffffff`, UTC without a zone (Python's `str(datetime)`). */
export const KasmDate = Type.String({
  pattern: '^\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d\\.\\d{6}$',
  examples: ['2026-11-22 09:15:00.123000'],
});

const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;

/** The database form (dashed) of a client's id, or undefined when it cannot be an id. */
export function parseId(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const s = value.trim();
  if (!UUID.test(s)) return undefined;
  const hex = s.replace(/-/g, '').toLowerCase();
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The wire form of a database uuid. */
export const toKasmId = (uuid: string) => uuid.replace(/-/g, '').toLowerCase();

/** The wire form of a timestamp: UTC `YYYY-MM-DD HH:MM:SS.ffffff`. */
export function toKasmDate(date: Date): string;
export function toKasmDate(date: Date | null): string | null;
export function toKasmDate(date: Date | null): string | null {
  if (!date) return null;
  return `${date.toISOString().slice(0, 23).replace('T', ' ')}000`;
}

/** Kasm cuts these free-text user fields to 64 characters (whole characters, never half an emoji). */
export const cut64 = (value: string | null | undefined) =>
  typeof value === 'string' ? Array.from(value).slice(0, 64).join('') : value;

/** The fixed id of the system group every user joins. */
export const ALL_USERS_GROUP_ID = '68d557ac-4cac-42cc-a9f3-1c7c853de0f3';
