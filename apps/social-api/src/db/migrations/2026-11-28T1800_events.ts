import { EVENT_LOG_V1 } from '@platform/db';

// Frozen: EVENT_LOG_V1 never changes (see its definition); a new event log would be a new migration.

/**
 * The event log of the live streams (`GET /api/events/posts`, `GET /api/events/feed`):
 * `events(id, kind, payload, at)`, ids committed in id order, a notification per insert on
 * `<schema>.events`.
 */
export const { up, down } = EVENT_LOG_V1;
