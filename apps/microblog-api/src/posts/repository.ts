import { sql, type Expression, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import { isoTimestamp, param, prepare, type Prepared } from '@platform/db';
import type { MicroblogDatabase, NewPost, NewReply, PostsTable, RepliesTable } from '../db/schema';
import { EMBEDDED_REPLIES, REACTION_KINDS, type QuestTopic, type ReactionKind, type Reply } from './schemas';

export interface PageRequest {
  limit: number;
  before?: number;
  topic?: QuestTopic;
}

/**
 * A post as the API shows it: its columns, `created_at` already in the wire's text form (ISO 8601
 * UTC with milliseconds), formatted by PostgreSQL rather than parsed into a Date and formatted
 * again per row.
 */
export type PostView = Omit<Selectable<PostsTable>, 'created_at'> & { timestamp: string };
/** A reply in exactly the wire's shape (see `Reply`): the rows are answered as they are. */
export type ReplyView = Reply;

export interface PostWithReplies {
  post: PostView;
  replies: ReplyView[];
}

/** A page's posts and the first replies of those that have any, by post id. */
export interface PageWithReplies {
  posts: PostView[];
  replies: ReadonlyMap<number, ReplyView[]>;
  hasMore: boolean;
}

const POST_COLUMNS = [
  'id',
  'content',
  'quest_topic',
  'student_name',
  'reply_count',
  'like_count',
  'love_count',
  'celebrate_count',
  'insightful_count',
  'support_count',
] as const satisfies readonly (keyof PostsTable)[];

const REPLY_COLUMNS = [
  'id',
  'post_id',
  'content',
  'student_name',
] as const satisfies readonly (keyof RepliesTable)[];

/** A post as a client writes it. */
type NewPostFields = Pick<NewPost, 'content' | 'quest_topic' | 'student_name'>;
/** A reply as a client writes it (no name: anonymous). */
type NewReplyFields = Pick<NewReply, 'post_id' | 'content' | 'student_name'>;

/** `jsonb` of a post's reaction counts, every kind, from the row `alias` names. */
const reactionsJson = (alias: string) =>
  sql`jsonb_build_object(${sql.join(REACTION_KINDS.map((k) => sql`${sql.lit(k)}, ${sql.ref(`${alias}.${k}_count`)}`))})`;

/**
 * The event of a change, written by the statement that makes it (a data-modifying CTE, after the
 * change: its insert takes the log's lock, held only to the statement's commit). `payload` is built
 * from the rows the change returned.
 */
const eventOf = (kind: 'post' | 'reply' | 'reaction', from: string, payload: RawBuilder<unknown>) =>
  sql`insert into events (kind, payload) select ${sql.lit(kind)}, ${payload} from ${sql.raw(from)}`;

/** A page query's values: given, or `param(n)` placeholders of a prepared page. */
interface PageValues {
  rows: number | Expression<number>;
  before?: number | Expression<number>;
  topic?: QuestTopic | Expression<QuestTopic>;
}

/** Every statement microblog-api runs against its schema. */
export function createPostsRepository(db: Kysely<MicroblogDatabase>) {
  const postColumns = [...POST_COLUMNS, isoTimestamp('created_at').as('timestamp')] as const;

  /**
   * Newest first, `rows` rows (a page and one more, to learn whether more exist), before a post id,
   * of a topic. Index-only ordering.
   */
  function pageSelect({ rows, before, topic }: PageValues) {
    let query = db.selectFrom('posts').select(postColumns).orderBy('id', 'desc').limit(rows);
    if (before !== undefined) query = query.where('id', '<', before);
    if (topic !== undefined) query = query.where('quest_topic', '=', topic);
    return query;
  }

  /** One page, with its values in the query (as the listing tests explain it). */
  const pageQuery = ({ limit, before, topic }: PageRequest) => pageSelect({ rows: limit + 1, before, topic });

  /**
   * The page statement of one shape (with or without `before`, `topic`), prepared once: its
   * parameters are, in order, `before`, `topic` (when the shape has them), the row limit (the
   * listing tests check every shape).
   */
  function preparePage(withBefore: boolean, withTopic: boolean) {
    let n = 0;
    const before = withBefore ? param<number>(++n) : undefined;
    const topic = withTopic ? param<QuestTopic>(++n) : undefined;
    return prepare(db, pageSelect({ rows: param<number>(++n), before, topic }), (request: PageRequest) => {
      const values: unknown[] = [];
      if (withBefore) values.push(request.before);
      if (withTopic) values.push(request.topic);
      values.push(request.limit + 1);
      return values;
    });
  }
  /** By shape: 2 with `before`, plus 1 with `topic`. */
  const pages = [
    preparePage(false, false),
    preparePage(false, true),
    preparePage(true, false),
    preparePage(true, true),
  ];

  /**
   * The first replies of each post, oldest first, in one statement whatever the number of posts
   * (`$1`: the post ids, as an array literal).
   */
  const firstRepliesOf = prepare(
    db,
    sql<ReplyView>`
      select ${sql.join(REPLY_COLUMNS.map((c) => sql.ref(`r.${c}`)))},
        ${isoTimestamp('r.created_at')} as timestamp
      from unnest(${param<string>(1)}::integer[]) as p(id)
      cross join lateral (
        select * from replies where replies.post_id = p.id order by replies.id limit ${sql.lit(EMBEDDED_REPLIES)}
      ) r
      order by r.post_id, r.id`,
    (ids: string) => [ids],
  );

  /**
   * The first replies of `posts`, by post id (a post without replies is not in the map). The ids go
   * as an array literal written here (they are integers): pg's generic conversion would check and
   * quote each element of every page.
   */
  async function firstReplies(posts: readonly PostView[]): Promise<Map<number, ReplyView[]>> {
    const byPost = new Map<number, ReplyView[]>();
    if (!posts.length) return byPost;
    let ids = '{';
    for (let i = 0; i < posts.length; i++) ids += (i ? ',' : '') + Math.trunc(posts[i].id);
    const rows = await firstRepliesOf(`${ids}}`);
    // Ordered by post: each post's replies are one run of rows.
    let current: ReplyView[] | undefined;
    for (const row of rows) {
      if (current === undefined || current[0].post_id !== row.post_id)
        byPost.set(row.post_id, (current = []));
      current.push(row);
    }
    return byPost;
  }

  /**
   * A post from the form (`$1` content, `$2` topic, `$3` name), answered as the API shows it, and its
   * `post` event (the post as a list item shows it) in the same statement.
   */
  const insertOne = prepare(
    db,
    sql<PostView>`
      with post as (
        insert into posts (content, quest_topic, student_name) values (${param(1)}, ${param(2)}, ${param(3)})
        returning ${sql.join(POST_COLUMNS.map((c) => sql.ref(c)))}, ${isoTimestamp('created_at')} as timestamp
      ), event as (
        ${eventOf(
          'post',
          'post',
          sql`jsonb_build_object('id', post.id, 'content', post.content, 'quest_topic', post.quest_topic,
            'student_name', post.student_name, 'timestamp', post.timestamp, 'replies', '[]'::jsonb,
            'reply_count', post.reply_count, 'reactions', ${reactionsJson('post')})`,
        )}
      )
      select * from post`,
    (post: NewPostFields) => [post.content, post.quest_topic, post.student_name],
  );

  /**
   * A reply counted on its post, in one statement (`$1` the post, `$2` content, `$3` name or null):
   * the counter's UPDATE locks the post row, so concurrent replies never lose a count, and the reply
   * is inserted only when it found the post (no row: no such post); then its `reply` event (the reply,
   * the post's new count and topic). All of it commits or none.
   */
  const replyTo = prepare(
    db,
    sql<ReplyView>`
      with post as (
        update posts set reply_count = reply_count + 1 where id = ${param(1)}
        returning id, reply_count, quest_topic
      ), reply as (
        insert into replies (post_id, content, student_name)
        select post.id, ${param(2)}::text, ${param(3)}::text from post
        returning ${sql.join(REPLY_COLUMNS.map((c) => sql.ref(c)))}, ${isoTimestamp('created_at')} as timestamp
      ), event as (
        ${eventOf(
          'reply',
          'reply cross join post',
          sql`jsonb_build_object('reply', to_jsonb(reply), 'reply_count', post.reply_count,
            'quest_topic', post.quest_topic)`,
        )}
      )
      select * from reply`,
    (reply: NewReplyFields) => [reply.post_id, reply.content, reply.student_name ?? null],
  );

  /**
   * One UPDATE per reaction kind: `$2` added to its counter of post `$1`, the post answered, and its
   * `reaction` event (the post's counts after it) in the same statement.
   */
  const reactTo = {} as Record<ReactionKind, Prepared<PostView, [postId: number, count: number]>>;
  for (const kind of REACTION_KINDS) {
    const column = sql.ref(`${kind}_count`);
    reactTo[kind] = prepare(
      db,
      sql<PostView>`
        with post as (
          update posts set ${column} = ${column} + ${param(2)} where id = ${param(1)}
          returning ${sql.join(POST_COLUMNS.map((c) => sql.ref(c)))}, ${isoTimestamp('created_at')} as timestamp
        ), event as (
          ${eventOf(
            'reaction',
            'post',
            sql`jsonb_build_object('post_id', post.id, 'reactions', ${reactionsJson('post')},
              'quest_topic', post.quest_topic)`,
          )}
        )
        select * from post`,
      (postId: number, count: number) => [postId, count],
    );
  }

  async function withReplies(posts: PostView[]): Promise<PostWithReplies[]> {
    const replies = await firstReplies(posts);
    return posts.map((post) => ({ post, replies: replies.get(post.id) ?? [] }));
  }

  return {
    pageQuery,

    /** A page of posts with their replies: two statements whatever the page size. */
    async listPage(request: PageRequest): Promise<PageWithReplies> {
      const rows =
        await pages[(request.before !== undefined ? 2 : 0) + (request.topic !== undefined ? 1 : 0)](request);
      const hasMore = rows.length > request.limit;
      const posts = hasMore ? rows.slice(0, request.limit) : rows;
      return { posts, replies: await firstReplies(posts), hasMore };
    },

    async insertPost(post: NewPostFields): Promise<PostView> {
      return (await insertOne(post))[0];
    },

    /** Adds many posts in one statement (seeding). */
    async insertPosts(posts: NewPost[]): Promise<number[]> {
      if (!posts.length) return [];
      const rows = await db.insertInto('posts').values(posts).returning('id').execute();
      return rows.map((r) => r.id);
    },

    /** Adds a reply and counts it on its post, atomically; null when the post does not exist. */
    async insertReply(reply: NewReplyFields): Promise<ReplyView | null> {
      return (await replyTo(reply))[0] ?? null;
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
      const [post] = await reactTo[kind](postId, count);
      return post ? (await withReplies([post]))[0] : null;
    },
  };
}

export type PostsRepository = ReturnType<typeof createPostsRepository>;
