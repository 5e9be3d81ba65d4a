import { sql, type Kysely } from 'kysely';
import { createEventLogRepository, type EventRow } from '@platform/db';
import type { SocialDatabase } from '../db/schema';
import { postFromRow, type PostRow } from '../posts/repository';
import { serializePost } from '../posts/serialize';
import type { SocialEvent } from './schemas';

/** `post` and `post_updated` keep the post's row (its author's too); the rest their data as sent. */
function toEvent(row: EventRow): SocialEvent {
  const { id, kind } = row;
  switch (kind) {
    case 'post':
    case 'post_updated':
      return { id, kind, data: serializePost(postFromRow(row.payload as PostRow)) };
    case 'post_deleted': {
      const data = row.payload as { id: number; author_id: number };
      // jsonb keeps keys in an order of its own: the data as the schema lists it.
      return { id, kind, data: { id: data.id, author_id: data.author_id } };
    }
    case 'feed_changed': {
      const data = row.payload as { follower_id: number; user_id: number; following: boolean };
      return {
        id,
        kind,
        data: { follower_id: data.follower_id, user_id: data.user_id, following: data.following },
      };
    }
    default:
      throw new Error(`unknown event kind in the log: ${JSON.stringify(kind)}`);
  }
}

/**
 * The event log as the streams read it (the log's own statements: @platform/db's event log
 * repository; the events are written by the posts and users repositories, each in the statement of
 * the change it tells about), and what the streams check against the database.
 */
export function createEventsRepository(db: Kysely<SocialDatabase>) {
  const log = createEventLogRepository(db);
  return {
    async after(afterId: number, limit: number): Promise<SocialEvent[]> {
      return (await log.after(afterId, limit)).map(toEvent);
    },
    bounds: log.bounds,
    prune: log.prune,

    /**
     * The authors of a user's feed (the user and everyone they follow) and the log's newest id, in
     * one statement (one snapshot): a follow committed after it is an event after that id.
     */
    async feedAuthors(userId: number): Promise<{ authors: number[]; position: number }> {
      const { rows } = await sql<{ authors: number[]; position: string | null }>`
        select array(select f.followed_id from followers f where f.follower_id = ${userId}) as authors,
          (select max(id) from events) as position`.execute(db);
      return { authors: [userId, ...rows[0].authors], position: Number(rows[0].position ?? 0) };
    },

    /** When the access token of pair `tokenId` ends (undefined: no such pair any more). */
    async accessExpiration(tokenId: string): Promise<Date | undefined> {
      const row = await db
        .selectFrom('tokens')
        .select('access_expiration')
        .where('id', '=', tokenId)
        .executeTakeFirst();
      return row?.access_expiration;
    },

    /** Of these pairs, those whose access token is still live at `at`: one statement for every stream. */
    async liveTokens(tokenIds: readonly string[], at: Date): Promise<Set<string>> {
      if (tokenIds.length === 0) return new Set();
      const rows = await db
        .selectFrom('tokens')
        .select('id')
        .where('id', 'in', tokenIds)
        .where('access_expiration', '>', at)
        .execute();
      return new Set(rows.map((row) => String(row.id)));
    },
  };
}

export type EventsRepository = ReturnType<typeof createEventsRepository>;
