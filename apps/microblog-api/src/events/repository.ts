import type { Kysely } from 'kysely';
import type { TSchema } from '@sinclair/typebox';
import { createEventLogRepository, type EventRow } from '@platform/db';
import type { MicroblogDatabase } from '../db/schema';
import { Post, Reply } from '../posts/schemas';
import { EVENT_DATA, type MicroblogEvent } from './schemas';

/** The named schemas (`$id`) the events' schemas refer to. */
const NAMED = { Post, Reply };

/**
 * `value` with its keys in the order of `schema`'s properties, nested: jsonb keeps keys in an order
 * of its own, and an event's `data:` is sent as the API writes the same shape (a `post` event's is
 * the very JSON of a list item).
 */
function inSchemaOrder(schemaOrRef: TSchema, value: unknown): unknown {
  const schema: TSchema = NAMED[schemaOrRef.$ref as keyof typeof NAMED] ?? schemaOrRef;
  if (Array.isArray(value)) return schema.items ? value.map((v) => inSchemaOrder(schema.items, v)) : value;
  if (value === null || typeof value !== 'object' || !schema.properties) return value;
  const ordered: Record<string, unknown> = {};
  const source = value as Record<string, unknown>;
  for (const key of Object.keys(schema.properties))
    if (key in source) ordered[key] = inSchemaOrder(schema.properties[key], source[key]);
  return ordered;
}

function toEvent(row: EventRow): MicroblogEvent {
  const schema = EVENT_DATA[row.kind as keyof typeof EVENT_DATA];
  return {
    id: row.id,
    kind: row.kind,
    data: schema ? inSchemaOrder(schema, row.payload) : row.payload,
  } as MicroblogEvent;
}

/**
 * The event log as the stream reads it (SQL: @platform/db's event log repository; the events are
 * written by the posts repository's statements, each with the change it tells about).
 */
export function createEventsRepository(db: Kysely<MicroblogDatabase>) {
  const log = createEventLogRepository(db);
  return {
    async after(afterId: number, limit: number): Promise<MicroblogEvent[]> {
      return (await log.after(afterId, limit)).map(toEvent);
    },
    bounds: log.bounds,
    prune: log.prune,
  };
}
