import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type TSchema } from '@sinclair/typebox';
import { errorResponses, nativeJson, rejectNonFinite, RequestValidationError } from '@platform/http-kit';
import { MAX_ID } from '@platform/schema';
import { PostNotFoundError, problemDetailsDialect } from '../errors';
import { createPostsRepository, type PostWithReplies, type ReplyView } from './repository';
import {
  CreatePostBody,
  CreateReplyBody,
  DEFAULT_PAGE_SIZE,
  ListQuery,
  Post,
  ReactionBody,
  Reply,
  type ReactionKind,
} from './schemas';

// 500 and 503 are declared on every route by the platform (defaultErrorResponses).
const errors = (...statuses: number[]) => errorResponses(problemDetailsDialect, statuses);
const WRITE_ERRORS = [400, 413, 415, 429];

/** A write over a write limit (see the API's description): the error body, and when to try again. */
const tooManyWrites = () => ({
  429: {
    ...(errors(429)[429] as object),
    description:
      'Over a write limit: this browser’s (client id cookie), its address’s ceiling for all its browsers, ' +
      'or its address’s budget for writes without a client id; `detail` says which',
    headers: {
      'Retry-After': {
        type: 'integer',
        minimum: 1,
        description: 'Seconds until the limit lets this client write again',
      },
    },
  },
});

/** Reply rows come in the wire's shape already (see the repository). */
const toReply = (row: ReplyView): Reply => row;

/** Timestamps come as wire text from SQL: no Date is parsed and formatted again per row. */
function toPost({ post, replies }: PostWithReplies): Post {
  return {
    id: post.id,
    content: post.content,
    quest_topic: post.quest_topic,
    student_name: post.student_name,
    timestamp: post.timestamp,
    replies,
    reply_count: post.reply_count,
    reactions: {
      like: post.like_count,
      love: post.love_count,
      celebrate: post.celebrate_count,
      insightful: post.insightful_count,
      support: post.support_count,
    },
  };
}

/** `post_id`, or its aliases `postId` / `microblogId` (clients of the same ecosystem send those). */
function postIdOf(body: {
  post_id?: number | string;
  postId?: number | string;
  microblogId?: number | string;
}): number {
  const raw = body.post_id ?? body.postId ?? body.microblogId;
  if (raw === undefined)
    throw new RequestValidationError([
      { field: 'post_id', message: 'post_id is required (or postId / microblogId)' },
    ]);
  const id = Number(raw);
  // A well-formed id outside the id range names no post.
  if (id < 1 || id > MAX_ID) throw new PostNotFoundError(String(raw));
  return id;
}

/** What a non-finite number in the list query is told (see `rejectNonFinite`): the schema's own bounds. */
function outOfRange(field: keyof typeof ListQuery.properties) {
  const { minimum, maximum } = ListQuery.properties[field] as { minimum: number; maximum: number };
  return `${field} must be between ${minimum} and ${maximum}`;
}

/**
 * A write to the post its body names (`post_id` or an alias): `write` gets the post's id and answers
 * nothing when no post has it, a 404.
 */
async function toNamedPost<T>(
  body: Parameters<typeof postIdOf>[0],
  write: (postId: number) => Promise<T | null>,
): Promise<T> {
  const postId = postIdOf(body);
  const result = await write(postId);
  if (!result) throw new PostNotFoundError(postId);
  return result;
}

const postsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const posts = createPostsRepository(app.database.db);
  const writeLimit = app.writeRateLimit;
  /**
   * A write's route options: the write limits, its body, its answer and the write
   * errors (404 too when the write names a post).
   */
  const write = <Body extends TSchema, Answer extends Record<number, TSchema>>(route: {
    summary: string;
    description: string;
    body: Body;
    answer: Answer;
    namesPost?: boolean;
  }) => ({
    onRequest: writeLimit,
    schema: {
      tags: ['posts'],
      summary: route.summary,
      description: route.description,
      body: route.body,
      response: {
        ...route.answer,
        ...errors(...WRITE_ERRORS, ...(route.namesPost ? [404] : [])),
        ...tooManyWrites(),
      },
    },
  });

  app.get(
    '/microblog',
    {
      schema: {
        tags: ['posts'],
        summary: 'List posts, newest first',
        description:
          'A JSON array of posts by descending id, each with its first 100 replies (oldest first), `reply_count` and ' +
          'zero-filled reaction counts. Keyset pagination: when more posts exist the response carries ' +
          '`Link: </api/microblog?before=ID&limit=N>; rel="next"` (keeping `topic` when filtered). An empty database gives `[]`.',
        querystring: ListQuery,
        response: {
          200: Type.Array(Type.Ref(Post), {
            description: 'A page of posts',
            headers: {
              Link: {
                type: 'string',
                description: 'rel="next" link to the following page, when there is one',
              },
            },
          }),
          ...errors(400),
        },
      },
    },
    async (request, reply) => {
      rejectNonFinite(request.query, ['limit', 'before'], outOfRange);
      const { limit = DEFAULT_PAGE_SIZE, before, topic } = request.query;
      const page = await posts.listPage({ limit, before, topic });
      if (page.hasMore) {
        const last = page.posts[page.posts.length - 1].id;
        // Integers and a topic of the enum (letters and underscores): nothing to escape.
        reply.header(
          'link',
          `</api/microblog?before=${last}&limit=${limit}${topic ? `&topic=${topic}` : ''}>; rel="next"`,
        );
      }
      // toPost builds exactly the schema's properties in its order, and reply rows are selected in the
      // Reply shape, so the native serialiser writes the schema's bytes (test/wire-exact.test.ts).
      const answer: Post[] = [];
      for (const post of page.posts) answer.push(toPost({ post, replies: page.replies.get(post.id) ?? [] }));
      return nativeJson(reply, answer);
    },
  );

  app.post(
    '/microblog',
    write({
      summary: 'Write a post',
      description:
        'Creates a post. Text is trimmed and stored raw. Counts against the per-address write rate limit.',
      body: CreatePostBody,
      answer: { 201: Type.Ref(Post, { description: 'The created post (no replies, zero reactions)' }) },
    }),
    async (request, reply) => {
      const { content, quest_topic, student_name } = request.body;
      const row = await posts.insertPost({ content, quest_topic, student_name });
      return reply.status(201).send(toPost({ post: row, replies: [] }));
    },
  );

  app.post(
    '/microblog/reply',
    write({
      summary: 'Reply to a post',
      description:
        'Adds a reply to the post named by `post_id` (a number or a string of digits; aliases `postId`, `microblogId`). ' +
        '`student_name` is optional (absent or null: anonymous). Counts against the write rate limit.',
      body: CreateReplyBody,
      answer: { 201: Type.Ref(Reply, { description: 'The created reply' }) },
      namesPost: true,
    }),
    async (request, reply) => {
      const { content, student_name = null } = request.body;
      const row = await toNamedPost(request.body, (post_id) =>
        posts.insertReply({ post_id, content, student_name }),
      );
      return reply.status(201).send(toReply(row));
    },
  );

  app.post(
    '/microblog/reaction',
    write({
      summary: 'React to a post',
      description:
        'Adds one reaction of `reaction_type` (default `like`; alias `reactionType`) to the post named by `post_id` ' +
        '(aliases `postId`, `microblogId`). A reaction is a counter: every request adds one, atomically. ' +
        'Answers the updated post. Counts against the write rate limit.',
      body: ReactionBody,
      answer: { 200: Type.Ref(Post, { description: 'The post with its updated counts' }) },
      namesPost: true,
    }),
    async (request) => {
      const kind: ReactionKind = request.body.reaction_type ?? request.body.reactionType ?? 'like';
      return toPost(await toNamedPost(request.body, (postId) => posts.addReaction(postId, kind)));
    },
  );
};

export default postsRoutes;
