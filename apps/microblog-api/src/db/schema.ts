import type { Generated, Insertable, Selectable } from 'kysely';
import type { EventsTable, ServiceSecretsTable } from '@platform/db';
import type { QuestTopic, ReactionKind } from '../posts/schemas';

type ReactionColumns = { [K in ReactionKind as `${K}_count`]: Generated<number> };

export interface PostsTable extends ReactionColumns {
  id: Generated<number>;
  content: string;
  quest_topic: QuestTopic;
  student_name: string;
  created_at: Generated<Date>;
  reply_count: Generated<number>;
}
export type PostRow = Selectable<PostsTable>;
export type NewPost = Insertable<PostsTable>;

export interface RepliesTable {
  id: Generated<number>;
  post_id: number;
  content: string;
  student_name: string | null;
  created_at: Generated<Date>;
}
export type ReplyRow = Selectable<RepliesTable>;
export type NewReply = Insertable<RepliesTable>;

export interface MicroblogDatabase {
  posts: PostsTable;
  replies: RepliesTable;
  /** Secrets the service made for itself (see the migration that creates it). */
  service_secrets: ServiceSecretsTable<'client_id'>;
  /** The live stream's event log (EVENT_LOG_V1 of @platform/db). */
  events: EventsTable;
}
