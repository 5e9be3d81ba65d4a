import { sql, type Kysely, type SelectQueryBuilder } from 'kysely';
import type { SocialDatabase } from '../db/schema';
import type { PageRequest, PageSource } from '../pagination';
import { publicUserColumns, type PublicUserRow } from '../users/repository';

export interface PostWithAuthor {
  id: number;
  text: string;
  timestamp: Date;
  author: PublicUserRow;
}

type Joined = SocialDatabase & { p: SocialDatabase['posts'] };

/** The post columns plus the author's public columns, prefixed so they cannot clash. */
const postWithAuthorColumns = [
  'p.id as post_id',
  'p.text as post_text',
  'p.timestamp as post_timestamp',
  ...publicUserColumns,
] as const;

type Row = { post_id: number; post_text: string; post_timestamp: Date } & PublicUserRow;

/** The columns left once the post's are taken are exactly the author's (`publicUserColumns`). */
const toPost = ({ post_id, post_text, post_timestamp, ...author }: Row): PostWithAuthor => ({
  id: post_id,
  text: post_text,
  timestamp: post_timestamp,
  author,
});

export function createPostsRepository(db: Kysely<SocialDatabase>) {
  /** Posts joined with their authors. */
  const posts = () => db.selectFrom('posts as p').innerJoin('users', 'users.id', 'p.user_id');

  /** Narrows posts to some authors (one user, or a feed); the posts table alone, so counts need no join. */
  type Narrow = <O>(q: SelectQueryBuilder<Joined, 'p', O>) => SelectQueryBuilder<Joined, 'p', O>;

  /** Newest first, by timestamp then id; `after` = strictly older than the cursor. One page is one statement. */
  const newestFirst = (narrow: Narrow): PageSource<PostWithAuthor, Date> => ({
    async count(after) {
      // Every post has an author (a foreign key), so the count reads posts only.
      const row = await narrow(db.selectFrom('posts as p'))
        .select((eb) => [
          eb.fn.countAll<string>().as('total'),
          after === undefined
            ? sql<string>`0`.as('at_or_before')
            : sql<string>`count(*) filter (where p.timestamp >= ${after})`.as('at_or_before'),
        ])
        .executeTakeFirstOrThrow();
      return { total: Number(row.total), atOrBefore: Number(row.at_or_before) };
    },
    async page(request: PageRequest<Date>) {
      let q = narrow(db.selectFrom('posts as p'))
        .innerJoin('users', 'users.id', 'p.user_id')
        .select(postWithAuthorColumns)
        .orderBy('p.timestamp', 'desc')
        .orderBy('p.id', 'desc')
        .limit(request.limit);
      q = request.mode === 'after' ? q.where('p.timestamp', '<', request.after) : q.offset(request.offset);
      return (await q.execute()).map(toPost);
    },
  });

  return {
    /** Inserts a post and returns it with its author, in one statement. */
    async create(userId: number, text: string, timestamp: Date): Promise<PostWithAuthor> {
      const row = await db
        .with('p', (w) => w.insertInto('posts').values({ user_id: userId, text, timestamp }).returningAll())
        .selectFrom('p')
        .innerJoin('users', 'users.id', 'p.user_id')
        .select(postWithAuthorColumns)
        .executeTakeFirstOrThrow();
      return toPost(row);
    },

    async findById(id: number): Promise<PostWithAuthor | undefined> {
      const row = await posts().select(postWithAuthorColumns).where('p.id', '=', id).executeTakeFirst();
      return row && toPost(row);
    },

    /** The author of a post (undefined: no such post). */
    async authorOf(id: number): Promise<number | undefined> {
      const row = await db.selectFrom('posts').select('user_id').where('id', '=', id).executeTakeFirst();
      return row?.user_id;
    },

    async updateText(id: number, authorId: number, text: string): Promise<boolean> {
      const result = await db
        .updateTable('posts')
        .set({ text })
        .where('id', '=', id)
        .where('user_id', '=', authorId)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    },

    async delete(id: number, authorId: number): Promise<boolean> {
      const result = await db
        .deleteFrom('posts')
        .where('id', '=', id)
        .where('user_id', '=', authorId)
        .executeTakeFirst();
      return Number(result.numDeletedRows) === 1;
    },

    all: () => newestFirst((q) => q),

    byAuthor: (userId: number) => newestFirst((q) => q.where('p.user_id', '=', userId)),

    /**
     * The user's own posts and those of everyone they follow: one statement, whatever the number
     * followed. One author set (`IN` a union, not `= me OR IN followed`, which the planner cannot
     * turn into a join) so the count and the page read posts_user_timestamp_idx, never every post.
     */
    feed: (userId: number) =>
      newestFirst((q) =>
        q.where(
          'p.user_id',
          'in',
          db
            .selectFrom('followers')
            .select('followers.followed_id')
            .where('followers.follower_id', '=', userId)
            .unionAll(db.selectNoFrom(sql<number>`${userId}::integer`.as('followed_id'))),
        ),
      ),
  };
}
