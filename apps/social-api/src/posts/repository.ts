import { sql, type Expression, type Kysely, type SqlBool } from 'kysely';
import type { SocialDatabase } from '../db/schema';
import { isoTimestamp, param, prepare } from '@platform/db';
import { pageFromRows, type PageRequest, type PageSource } from '../wire/pagination';
import { publicUserColumns, type PublicUserRow } from '../users/repository';

export interface PostWithAuthor {
  id: number;
  text: string;
  /** As the API writes it (ISO 8601, UTC, milliseconds): formatted by PostgreSQL. */
  timestamp: string;
  author: PublicUserRow;
}

/** The post columns plus the author's public columns, prefixed so they cannot clash. */
const postWithAuthorColumns = [
  'p.id as post_id',
  'p.text as post_text',
  isoTimestamp('p.timestamp').as('post_timestamp'),
  ...publicUserColumns,
] as const;

type Row = { post_id: number; post_text: string; post_timestamp: string } & PublicUserRow;

/**
 * A post and its author from a row: the author is the row's `publicUserColumns`, copied by name
 * (an object rest costs far more, on every row of every page).
 */
const toPost = (row: Row): PostWithAuthor => ({
  id: row.post_id,
  text: row.post_text,
  timestamp: row.post_timestamp,
  author: {
    id: row.id,
    username: row.username,
    email: row.email,
    about_me: row.about_me,
    first_seen: row.first_seen,
    last_seen: row.last_seen,
    has_password: row.has_password,
    posts_count: row.posts_count,
    followers_count: row.followers_count,
    following_count: row.following_count,
  } satisfies Record<keyof PublicUserRow, unknown>,
});

/** A post of a page row (see `pageFromRows`): absent in the one row of an empty page. */
const postFromPageRow = (row: { [K in keyof Row]: Row[K] | null }) =>
  row.post_id === null ? undefined : toPost(row as Row);

/**
 * A post collection: which posts (a condition on `p.user_id` of the owner `$3`), and its size from
 * the counters (null when the owner does not exist).
 */
interface PostScope {
  authors?: (userId: Expression<number>) => Expression<SqlBool>;
  total: Expression<string | number | null | undefined>;
}

export function createPostsRepository(db: Kysely<SocialDatabase>) {
  /** Posts joined with their authors. */
  const posts = () => db.selectFrom('posts as p').innerJoin('users', 'users.id', 'p.user_id');
  const owner = param<number>(3);

  /**
   * One page of a scope, newest first by timestamp then id, in one statement: the size (a counter),
   * after a cursor the posts at or before it (a range count of the timestamp index, reading only
   * the posts newer than the cursor), and the page (LEFT JOIN LATERAL: one row even when empty; an
   * offset at or past the total reads nothing). `$1` limit, `$2` offset or cursor, `$3` the owner.
   */
  const newestFirst = (scope: PostScope) => {
    const inScope = <Q extends { where(e: Expression<SqlBool>): Q }>(q: Q): Q =>
      scope.authors ? q.where(scope.authors(owner)) : q;
    const compile = (mode: PageRequest<Date>['mode']) => {
      const atOrBefore =
        mode === 'after'
          ? inScope(db.selectFrom('posts as p').where('p.timestamp', '>=', param<Date>(2)))
              .select((eb) => eb.fn.countAll<string>().as('n'))
              .as('at_or_before')
          : sql<string>`0`.as('at_or_before');
      const page = inScope(posts())
        .select(postWithAuthorColumns)
        .orderBy('p.timestamp', 'desc')
        .orderBy('p.id', 'desc')
        .limit(param<number>(1));
      return prepare(
        db,
        db
          .selectFrom(
            db.selectNoFrom([sql<string | number | null>`(${scope.total})`.as('total'), atOrBefore]).as('c'),
          )
          .leftJoinLateral(
            (mode === 'after'
              ? page.where('p.timestamp', '<', param<Date>(2))
              : page.where(sql<boolean>`${param(2)} < c.total`).offset(param<number>(2))
            ).as('page'),
            (join) => join.onTrue(),
          )
          .select(['c.total', 'c.at_or_before'])
          .selectAll('page'),
        (ownerId: number, request: PageRequest<Date>) => [
          request.limit,
          request.mode === 'after' ? request.after : request.offset,
          ownerId,
        ],
      );
    };
    const pages = { after: compile('after'), offset: compile('offset') };
    return (ownerId: number): PageSource<PostWithAuthor, Date> => ({
      read: async (request) => pageFromRows(await pages[request.mode](ownerId, request), postFromPageRow),
    });
  };

  /**
   * The feed's authors: the user and everyone they follow. One author set (`IN` a union, not `= me
   * OR IN followed`, which the planner cannot turn into a join) so the count and the page read
   * posts_user_timestamp_idx, never every post; `IN` also counts a user who follows themselves once.
   */
  const feedAuthors = (userId: Expression<number>) =>
    db
      .selectFrom('followers')
      .select('followers.followed_id')
      .where('followers.follower_id', '=', userId)
      .unionAll(db.selectNoFrom(sql<number>`${userId}::integer`.as('followed_id')));

  const allPosts = newestFirst({ total: db.selectFrom('totals').select('totals.posts').$asScalar() });
  const byAuthor = newestFirst({
    authors: (userId) => sql<SqlBool>`p.user_id = ${userId}`,
    total: db
      .selectFrom('users as author')
      .select('author.posts_count')
      .where('author.id', '=', owner)
      .$asScalar(),
  });
  const feed = newestFirst({
    authors: (userId) => sql<SqlBool>`p.user_id in (${feedAuthors(userId)})`,
    total: db
      .selectFrom('users as author')
      .select(sql<string>`coalesce(sum(author.posts_count), 0)`.as('n'))
      .where('author.id', 'in', feedAuthors(owner))
      .$asScalar(),
  });

  const authorExists = prepare(
    db,
    db.selectFrom('users').select('users.id').where('users.id', '=', param<number>(1)),
    (id: number) => [id],
  );

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

    all: () => allPosts(0),

    /** One author's posts; reading a page says 404 when there is no such user (no lookup before it). */
    byAuthor: (userId: number): PageSource<PostWithAuthor, Date> => ({
      ...byAuthor(userId),
      exists: async () => (await authorExists(userId)).length > 0,
    }),

    /** The user's own posts and those of everyone they follow. */
    feed,
  };
}
