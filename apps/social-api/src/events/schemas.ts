import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { LastEventIdParameter } from '@platform/http-kit';
import { Id } from '@platform/schema';
import { Post } from '../posts/schemas';

/** `post`: a new post, exactly as `GET /api/posts` shows it. */
export const PostEventData = Type.Ref(Post, {
  description: 'A new post, exactly as `GET /api/posts` shows it',
});

/** `post_updated`: an edited post, as `GET /api/posts/<id>` shows it after the edit. */
export const PostUpdatedEventData = Type.Ref(Post, {
  description: 'An edited post, as `GET /api/posts/<id>` shows it after the edit',
});

/** `post_deleted`: which post went, and whose it was (a feed shows it only for the authors it follows). */
export const PostDeletedEventData = Type.Object(
  {
    id: Id({ description: 'The deleted post' }),
    author_id: Id({ description: 'Its author' }),
  },
  { description: 'A post was deleted: remove it from what you show' },
);

/** `feed_changed` (feed stream only): the caller followed or unfollowed someone. */
export const FeedChangedEventData = Type.Object(
  {
    follower_id: Id({ description: 'The caller (whose feed this is)' }),
    user_id: Id({ description: 'The user followed or unfollowed' }),
    following: Type.Boolean({ description: 'true: followed (their posts join the feed); false: unfollowed' }),
  },
  {
    description:
      'The caller followed or unfollowed `user_id`: older posts join or leave the feed, so reload it; new posts of ' +
      'that user arrive on this stream (or stop) from this event on',
  },
);

/** `token_expired` (both streams, last event): the access token ended; the stream closes after it. */
export const TokenExpiredEventData = Type.Object(
  {
    reason: Type.Union([Type.Literal('expired'), Type.Literal('revoked')], {
      description:
        '`expired`: its time is up; `revoked`: logged out, or ended by a reset or a refresh replay',
    }),
  },
  {
    description:
      'The access token of this stream ended; the stream closes after this event (sent without an `id:` line). Refresh the token (`PUT ' +
      '/api/tokens`) and reconnect with the new one and `last_event_id`: nothing is missed',
  },
);

/** The public stream's events by name (`event:`), each with the schema of its `data:`. */
export const POST_EVENTS = {
  post: PostEventData,
  post_updated: PostUpdatedEventData,
  post_deleted: PostDeletedEventData,
} as const satisfies Record<string, TSchema>;

/** What a stream sends itself, with no `id:` (the client's last id stays that of the log's last event). */
export const STREAM_END_EVENTS = { token_expired: TokenExpiredEventData } as const;

/** The feed stream's events: the posts of the feed's authors, its own changes, the token's end. */
export const FEED_EVENTS = { ...POST_EVENTS, feed_changed: FeedChangedEventData } as const;

type Data<S extends TSchema> = Static<S>;

/** An event of the social log as the streams send it (`feed_changed` only to the follower's feed). */
export type SocialEvent =
  | { id: number; kind: 'post'; data: Data<typeof PostEventData> }
  | { id: number; kind: 'post_updated'; data: Data<typeof PostUpdatedEventData> }
  | { id: number; kind: 'post_deleted'; data: Data<typeof PostDeletedEventData> }
  | { id: number; kind: 'feed_changed'; data: Data<typeof FeedChangedEventData> };

export const StreamQuery = Type.Object({
  access_token: Type.Optional(
    Type.String({
      description:
        'The access token, for clients that cannot send `Authorization` (a browser’s EventSource); the logs censor it',
    }),
  ),
  last_event_id: LastEventIdParameter,
});
