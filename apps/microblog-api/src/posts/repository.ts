import { sql, type Kysely, type Transaction } from 'kysely';
import type { MicroblogDatabase, NewPost, NewReply, PostRow, ReplyRow } from '../db/schema';
import { EMBEDDED_REPLIES, type QuestTopic, type ReactionKind } from './schemas';

export interface PageRequest {
  limit: number;
  before?: number;
  topic?: QuestTopic;
}

export interface PostWithReplies {
  post: PostRow;
  replies: ReplyRow[];
}

/** Every statement microblog-api runs against its schema. */
export function createPostsRepository(db: Kysely<MicroblogDatabase>) {
  /** One page, newest first, one extra row to learn whether more exist. Index-only ordering. */
  function pageQuery({ limit, before, topic }: PageRequest) {
    let query = db
      .selectFrom('posts')
      .selectAll()
      .orderBy('id', 'desc')
      .limit(limit + 1);
    if (before !== undefined) query = query.where('id', '<', before);
    if (topic !== undefined) query = query.where('quest_topic', '=', topic);
    return query;
  }

  /** The first replies of each post, oldest first, in one statement whatever the number of posts. */
  async function firstReplies(postIds: number[]): Promise<Map<number, ReplyRow[]>> {
    const byPost = new Map<number, ReplyRow[]>(postIds.map((id) => [id, []]));
    if (!postIds.length) return byPost;
    const { rows } = await sql<ReplyRow>`
      select r.* from unnest(${sql.val(postIds)}::integer[]) as p(id)
      cross join lateral (
        select * from replies where replies.post_id = p.id order by replies.id limit ${EMBEDDED_REPLIES}
      ) r
      order by r.post_id, r.id`.execute(db);
    for (const row of rows) byPost.get(row.post_id)?.push(row);
    return byPost;
  }

  async function withReplies(posts: PostRow[]): Promise<PostWithReplies[]> {
    const replies = await firstReplies(posts.map((p) => p.id));
    return posts.map((post) => ({ post, replies: replies.get(post.id) ?? [] }));
  }

  return {
    pageQuery,

    /** A page of posts with their replies: two statements whatever the page size. */
    async listPage(request: PageRequest): Promise<{ items: PostWithReplies[]; hasMore: boolean }> {
      const rows = await pageQuery(request).execute();
      const hasMore = rows.length > request.limit;
      return { items: await withReplies(hasMore ? rows.slice(0, request.limit) : rows), hasMore };
    },

    async insertPost(post: NewPost): Promise<PostRow> {
      return db.insertInto('posts').values(post).returningAll().executeTakeFirstOrThrow();
    },

    /** Adds many posts in one statement (seeding). */
    async insertPosts(posts: NewPost[]): Promise<number[]> {
      if (!posts.length) return [];
      const rows = await db.insertInto('posts').values(posts).returning('id').execute();
      return rows.map((r) => r.id);
    },

    /**
     * Adds a reply and counts it on its post, atomically; null when the post does not exist. The
     * counter update locks the post row, so concurrent replies never lose a count.
     */
    async insertReply(reply: NewReply): Promise<ReplyRow | null> {
      return db.transaction().execute(async (trx: Transaction<MicroblogDatabase>) => {
        const post = await trx
          .updateTable('posts')
          .set((eb) => ({ reply_count: eb('reply_count', '+', 1) }))
          .where('id', '=', reply.post_id)
          .returning('id')
          .executeTakeFirst();
        if (!post) return null;
        return trx.insertInto('replies').values(reply).returningAll().executeTakeFirstOrThrow();
      });
    },

    /** Adds many replies and their counts (seeding); all posts must exist. */
    async insertReplies(replies: NewReply[]): Promise<void> {
      if (!replies.length) return;
      await db.transaction().execute(async (trx) => {
        await trx.insertInto('replies').values(replies).execute();
        await sql`update posts set reply_count = (select count(*) from replies where replies.post_id = posts.id)
                  where id = any(${sql.val([...new Set(replies.map((r) => r.post_id))])}::integer[])`.execute(
          trx,
        );
      });
    },

    /**
     * Adds one reaction in a single UPDATE (the database serialises concurrent increments), and
     * returns the post with its replies; null when the post does not exist.
     */
    async addReaction(postId: number, kind: ReactionKind, count = 1): Promise<PostWithReplies | null> {
      const column = `${kind}_count` as const;
      const post = await db
        .updateTable('posts')
        .set((eb) => ({ [column]: eb(column, '+', count) }))
        .where('id', '=', postId)
        .returningAll()
        .executeTakeFirst();
      return post ? (await withReplies([post]))[0] : null;
    },
  };
}

export type PostsRepository = ReturnType<typeof createPostsRepository>;
