import { Type, type Static } from '@sinclair/typebox';
import {
  annotate,
  Id,
  IsoTimestamp,
  PageLimit,
  StringEnum,
  TRIM,
  TrimmedText,
  withMessage,
} from '@platform/schema';

export const QUEST_TOPICS = [
  'digital_footprint',
  'online_safety',
  'digital_literacy',
  'cyberbullying',
  'privacy_security',
  'digital_ethics',
] as const;
export type QuestTopic = (typeof QUEST_TOPICS)[number];

export const REACTION_KINDS = ['like', 'love', 'celebrate', 'insightful', 'support'] as const;
export type ReactionKind = (typeof REACTION_KINDS)[number];

/** Replies embedded in a listed post. */
export const EMBEDDED_REPLIES = 100;

export const QuestTopicSchema = StringEnum(QUEST_TOPICS, { description: 'The quest topic' });
const ReactionKindSchema = StringEnum(REACTION_KINDS);
const Content = TrimmedText(
  { min: 1, max: 280 },
  { description: 'Trimmed; stored and returned raw (clients escape it)' },
);
const StudentName = TrimmedText({ min: 1, max: 50 });

export const Reply = Type.Object(
  {
    id: Id(),
    post_id: Id(),
    content: Type.String(),
    student_name: Type.Union([Type.String(), Type.Null()], {
      description: 'null: the panel shows "Anonymous"',
    }),
    timestamp: IsoTimestamp(),
  },
  { $id: 'Reply', description: 'A reply to a post' },
);
export type Reply = Static<typeof Reply>;

export const ReactionCounts = Type.Object(
  Object.fromEntries(REACTION_KINDS.map((k) => [k, Type.Integer({ minimum: 0 })])) as Record<
    ReactionKind,
    ReturnType<typeof Type.Integer>
  >,
  { description: 'One counter per reaction kind, every kind present' },
);

export const Post = Type.Object(
  {
    id: Id({ description: 'Server-assigned, a JSON number' }),
    content: Type.String(),
    quest_topic: QuestTopicSchema,
    student_name: Type.String(),
    timestamp: IsoTimestamp({ description: 'Creation time, ISO 8601 UTC with milliseconds' }),
    replies: Type.Array(Type.Ref(Reply), {
      description: `Oldest first; at most the first ${EMBEDDED_REPLIES}`,
    }),
    reply_count: Type.Integer({ minimum: 0, description: 'Total replies of the post' }),
    reactions: ReactionCounts,
  },
  { $id: 'Post', description: 'A post with its first replies and reaction counts' },
);
export type Post = Static<typeof Post>;

/** Posts per page when the client does not say. */
export const DEFAULT_PAGE_SIZE = 100;

export const ListQuery = Type.Object({
  limit: Type.Optional(
    PageLimit({ max: 500, default: DEFAULT_PAGE_SIZE }, { description: 'Posts per page' }),
  ),
  before: Type.Optional(
    Id({ description: 'Only posts with a smaller id (the `Link` header gives the next value)' }),
  ),
  topic: Type.Optional(QuestTopicSchema),
});
export type ListQuery = Static<typeof ListQuery>;

export const CreatePostBody = Type.Object(
  { content: Content, quest_topic: QuestTopicSchema, student_name: StudentName },
  { description: 'Unknown fields (including id, timestamp and counters) are ignored' },
);
export type CreatePostBody = Static<typeof CreatePostBody>;

const PostIdValue = withMessage(
  Type.Union([Id(), Type.String({ pattern: '^[0-9]{1,10}$' })], {
    description: 'A post id, as a number or a string of digits',
  }),
  'must be a positive integer or a string of digits',
);
const PostIdFields = {
  post_id: Type.Optional(PostIdValue),
  postId: Type.Optional(annotate(PostIdValue, { description: 'Alias of post_id' })),
  microblogId: Type.Optional(annotate(PostIdValue, { description: 'Alias of post_id' })),
};

export const CreateReplyBody = Type.Object(
  {
    ...PostIdFields,
    content: Content,
    student_name: Type.Optional(
      withMessage(
        Type.Union([StudentName, Type.Null()], {
          [TRIM]: true,
          description: 'Optional; absent or null: anonymous',
        }),
        'must be 1..50 characters or null',
      ),
    ),
  },
  { description: 'One of post_id, postId or microblogId is required' },
);
export type CreateReplyBody = Static<typeof CreateReplyBody>;

export const ReactionBody = Type.Object(
  {
    ...PostIdFields,
    reaction_type: Type.Optional(annotate(ReactionKindSchema, { description: 'Defaults to like' })),
    reactionType: Type.Optional(annotate(ReactionKindSchema, { description: 'Alias of reaction_type' })),
  },
  { description: 'One of post_id, postId or microblogId is required; each request adds one reaction' },
);
export type ReactionBody = Static<typeof ReactionBody>;
