import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { LastEventIdParameter } from '@platform/http-kit';
import { annotate, Id } from '@platform/schema';
import { Post, QuestTopicSchema, ReactionCounts, Reply } from '../posts/schemas';

const PostTopic = annotate(QuestTopicSchema, { description: 'The post’s topic (what `topic` filters on)' });

/** `post`: the new post, exactly as a list item of `GET /api/microblog` shows it. */
export const PostEventData = Type.Ref(Post, { description: 'The new post, exactly as a list item' });

/** `reply`: the new reply and its post's new reply count. */
export const ReplyEventData = Type.Object(
  {
    reply: Type.Ref(Reply),
    reply_count: Type.Integer({ minimum: 1, description: 'The post’s reply count with this reply' }),
    quest_topic: PostTopic,
  },
  { description: 'A new reply and its post’s new `reply_count`' },
);

/** `reaction`: a post's reaction counts after a reaction. */
export const ReactionEventData = Type.Object(
  {
    post_id: Id(),
    reactions: ReactionCounts,
    quest_topic: PostTopic,
  },
  { description: 'A post’s reaction counts after a reaction' },
);

/** The events of the stream by name (`event:`), each with the schema of its `data:`. */
export const EVENT_DATA = {
  post: PostEventData,
  reply: ReplyEventData,
  reaction: ReactionEventData,
} as const satisfies Record<string, TSchema>;

type Kind = keyof typeof EVENT_DATA;

/** An event of the log as the stream sends it. */
export type MicroblogEvent = {
  [K in Kind]: { id: number; kind: K; data: Static<(typeof EVENT_DATA)[K]> };
}[Kind];

export const EventsQuery = Type.Object({
  topic: Type.Optional(
    annotate(QuestTopicSchema, { description: 'Only the posts of this topic, their replies and reactions' }),
  ),
  last_event_id: LastEventIdParameter,
});
