import { sql, type Expression, type Kysely, type RawBuilder } from 'kysely';
import type { SocialDatabase } from '../db/schema';
import { isoTimestamp, param, prepare } from '@platform/db';
import { MAX_LIMIT, pageFromRows, type PageRequest, type PageSource } from '../wire/pagination';
import { publicUserColumns, type PublicUserRow } from '../users/repository';
import { logged } from '../events/log';

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

/** A post and its author as one row (a page's, and the payload of the log's `post` events). */
export type PostRow = { post_id: number; post_text: string; post_timestamp: string } & PublicUserRow;
type Row = PostRow;

/**
 * A post and its author from a row: the author is the row's `publicUserColumns`, copied by name
 * (an object rest costs far more, on every row of every page).
 */
export const postFromRow = (row: Row): PostWithAuthor => ({
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
  row.post_id === null ? undefined : postFromRow(row as Row);

/** The keys of a page's posts, found before the page is dressed (joined, formatted). */
type PageKeys = RawBuilder<{ id: number; timestamp: Date }>;

/**
 * A post collection: the keys of one of its pages for each mode (`$1` limit, `$2` offset or
 * cursor, `$3` the owner), the collection's size from the counters (null when the owner does not
 * exist) and, after a cursor, how many of its posts sort at or before it.
 */
interface PostScope {
  keys: Record<PageRequest<Date>['mode'], PageKeys>;
  total: Expression<string | number | null | undefined>;
  atOrBefore: Expression<string | number>;
}

/** The smallest key (timestamp, id) of a cursor's time: every post of that time sorts at or after it. */
const cursorTs = sql`${param(2)}::timestamptz`;
const cursorId = sql`'-2147483648'::integer`;
const cursorKey = sql`(${cursorTs}, ${cursorId})`;

/**
 * The first `$1` of a scope's keys, found `MAX_LIMIT` at a time: a named statement's generic plan
 * (see `prepare`) knows nothing of `$1`, and a `LIMIT $1` on the index walk makes PostgreSQL guess a
 * tenth of the scope, a plan ten times costlier than the custom one for 25 rows, so every run would
 * be planned again. With the walk's limit a constant, the generic plan costs what a custom one does
 * and is kept: parsed and planned once per connection.
 */
const firstOfKeys = (keys: RawBuilder<unknown>): PageKeys =>
  sql`(select k.id, k.timestamp from ${keys} k order by k.timestamp desc, k.id desc limit ${param(1)})`;
const walkLimit = sql.lit(MAX_LIMIT);

/**
 * A scope whose positions the triggers keep in `post_buckets` (0: all posts; else an author's; see
 * migration 2026-11-28T1400_post_positions). The page at an offset: the bucket holding that position
 * (a running sum over the scope's bucket counts, newest first), then a walk inside it in the index,
 * never over the posts before it. After a cursor: the posts at or before it are the buckets that start
 * at or after the cursor plus a count inside the one bucket that holds it.
 */
function bucketed(db: Kysely<SocialDatabase>, scope: 'all' | 'author'): PostScope {
  const s = scope === 'all' ? sql`0` : param<number>(3);
  /** Posts of the scope strictly below a key (the index's order, so the walk starts there). */
  const below = (ts: RawBuilder<unknown>, id: RawBuilder<unknown>) =>
    scope === 'all'
      ? sql`(p.timestamp, p.id) < (${ts}, ${id})`
      : sql`p.user_id = ${s} and (p.user_id, p.timestamp, p.id) < (${s}, ${ts}, ${id})`;
  /** Posts of the scope at or above a key (both bounds of an author's range on the index). */
  const atOrAbove = (ts: RawBuilder<unknown>, id: RawBuilder<unknown>) =>
    scope === 'all'
      ? sql`(p.timestamp, p.id) >= (${ts}, ${id})`
      : sql`p.user_id = ${s} and (p.user_id, p.timestamp, p.id) >= (${s}, ${ts}, ${id})`;
  /** The first bucket above a key, as `hi` (none: above every post). */
  const nextBucket = (after: RawBuilder<unknown>, inclusive: boolean) => sql`left join lateral (
      select h.lo_ts, h.lo_id from post_buckets h
      where h.scope = ${s} and (h.lo_ts, h.lo_id) ${sql.raw(inclusive ? '>=' : '>')} ${after}
      order by h.lo_ts, h.lo_id limit 1
    ) hi on true`;
  const hiTs = sql`coalesce(hi.lo_ts, 'infinity')`;
  const hiId = sql`coalesce(hi.lo_id, 0)`;
  return {
    keys: {
      offset: firstOfKeys(sql`(
        select k.id, k.timestamp from (
          select t.lo_ts, t.lo_id, ${param(2)} - (t.through - t.n) as skip
          from (
            select b.lo_ts, b.lo_id, b.n,
              sum(b.n) over (order by b.lo_ts desc, b.lo_id desc rows unbounded preceding) as through
            from post_buckets b where b.scope = ${s}
          ) t
          where t.through > ${param(2)}
          order by t.lo_ts desc, t.lo_id desc limit 1
        ) t
        ${nextBucket(sql`(t.lo_ts, t.lo_id)`, false)}
        cross join lateral (
          select p.id, p.timestamp from posts p
          where ${below(hiTs, hiId)}
          order by p.timestamp desc, p.id desc offset t.skip limit ${walkLimit}
        ) k
      )`),
      after: firstOfKeys(
        sql`(${db
          .selectFrom('posts as p')
          .select(['p.id', 'p.timestamp'])
          .$if(scope === 'author', (q) => q.where('p.user_id', '=', param<number>(3)))
          .where('p.timestamp', '<', param<Date>(2))
          .orderBy('p.timestamp', 'desc')
          .orderBy('p.id', 'desc')
          .limit(walkLimit)})`,
      ),
    },
    total:
      scope === 'all'
        ? sql`(select totals.posts from totals)`
        : sql`(select author.posts_count from users author where author.id = ${s})`,
    atOrBefore: sql`(
      (select coalesce(sum(b.n), 0) from post_buckets b where b.scope = ${s} and (b.lo_ts, b.lo_id) >= ${cursorKey})
      + (select count(*) from (select 1) one ${nextBucket(cursorKey, true)}
         join posts p on ${atOrAbove(cursorTs, cursorId)} and ${below(hiTs, hiId)})
    )`,
  };
}

export function createPostsRepository(db: Kysely<SocialDatabase>) {
  /** Posts joined with their authors. */
  const posts = () => db.selectFrom('posts as p').innerJoin('users', 'users.id', 'p.user_id');
  const owner = param<number>(3);

  /**
   * One page of a scope, newest first by timestamp then id, in one statement: the size (a counter),
   * after a cursor the posts at or before it, and the page (LEFT JOIN LATERAL: one row even when
   * empty; an offset at or past the total reads nothing). The page's keys are found first, from an
   * index; only its rows are joined with their authors and formatted.
   */
  const newestFirst = (scope: PostScope) => {
    const compile = (mode: PageRequest<Date>['mode']) => {
      const keys = scope.keys[mode];
      // Each key dressed by its own lookups (a LATERAL subquery kept whole by `offset 0`), so no
      // plan joins the page to the whole posts table, whatever the planner guesses of its size.
      const page = db
        .selectFrom(keys.as('k'))
        .innerJoinLateral(
          (eb) =>
            eb
              .selectFrom('posts as p')
              .innerJoin('users', 'users.id', 'p.user_id')
              .select(postWithAuthorColumns)
              .whereRef('p.id', '=', 'k.id')
              .modifyEnd(sql`offset 0`)
              .as('dressed'),
          (join) => join.onTrue(),
        )
        .selectAll('dressed')
        .orderBy('k.timestamp', 'desc')
        .orderBy('k.id', 'desc');
      return prepare(
        db,
        db
          .selectFrom(
            db
              .selectNoFrom([
                sql<string | number | null>`${scope.total}`.as('total'),
                (mode === 'after' ? sql<string>`${scope.atOrBefore}` : sql<string>`0`).as('at_or_before'),
              ])
              .as('c'),
          )
          .leftJoinLateral(
            (mode === 'after' ? page : page.where(sql<boolean>`${param(2)} < c.total`)).as('page'),
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
   * OR IN followed`, which the planner cannot turn into a join) so a count in the cursor's week reads
   * posts_user_timestamp_idx, never every post; `IN` also counts a user who follows themselves once.
   */
  const feedAuthors = (userId: Expression<number>) =>
    db
      .selectFrom('followers')
      .select('followers.followed_id')
      .where('followers.follower_id', '=', userId)
      .unionAll(db.selectNoFrom(sql<number>`${userId}::integer`.as('followed_id')));
  /** The feed's week of a cursor. */
  const cursorWeek = sql`date_bin('7 days', ${param(2)}::timestamptz, '2000-01-03 00:00:00+00')`;
  /**
   * The feed's weeks (those before `before` when given), newest first, with the running count of posts from
   * the newest (`through`): the owner's own row per week, fanned out on write (migration
   * 2026-11-28T1700_feed_weeks), one a week of posts whatever the number of authors.
   */
  const feedWeeks = (before?: RawBuilder<unknown>) => sql`(
    select fw.week, fw.n, sum(fw.n) over (order by fw.week desc rows unbounded preceding) as through
    from feed_weeks fw where fw.user_id = ${owner} ${before ? sql`and fw.week < ${before}` : sql``}
  )`;
  /** The start of the week of `r` holding its `position`-th post (from 1; none: before all). */
  const weekHolding = (position: RawBuilder<unknown>) =>
    sql`coalesce((select r.week from r where r.through >= ${position} order by r.week desc limit 1), '-infinity')`;
  /** The feed's posts (keys only) in a range of time: each author's index entries in that range. */
  const feedPosts = (from: RawBuilder<unknown>, before: RawBuilder<unknown>) => sql`
    select p.id, p.timestamp from posts p
    where p.user_id in (${feedAuthors(owner)}) and p.timestamp >= ${from} and p.timestamp < ${before}`;
  /**
   * The feed's newest posts (keys only) in a range of time, at most `most` of each author (no more of
   * one author can be among the range's first `most`): a feed of one prolific author reads a page,
   * not a week. The authors as a set (`union`), so a user who follows themself is walked once.
   */
  const newestInRange = (
    from: RawBuilder<unknown>,
    before: RawBuilder<unknown>,
    most: RawBuilder<unknown>,
  ) => sql`
    select p.id, p.timestamp
    from (select f.followed_id as author from followers f where f.follower_id = ${owner} union select ${owner}::integer) a
    cross join lateral (
      select p.id, p.timestamp from posts p
      where p.user_id = a.author and p.timestamp >= ${from} and p.timestamp < ${before}
      order by p.timestamp desc, p.id desc limit ${most}
    ) p`;
  /**
   * The feed's keys, newest first, from its authors' index entries, never their rows: only the posts
   * of the weeks that hold the page are read and sorted (at most two weeks' of the feed, and at most
   * a page's depth in the range of each author; found by the running count over the owner's weeks),
   * at every depth, the first page too (whose newest week may hold a single post): a feed whose
   * authors wrote 50,000 posts reads the last week's.
   */
  const feedKeys = {
    /** The week holding position `$2`, and the posts from the week holding `$2 + $1` to its end. */
    offset: sql<{ id: number; timestamp: Date }>`(
      with r as ${feedWeeks()}
      select k.id, k.timestamp
      from (
        select r.week, ${param(2)} - (r.through - r.n) as skip from r
        where r.through > ${param(2)} order by r.week desc limit 1
      ) t
      cross join lateral (
        ${newestInRange(weekHolding(sql`${param(2)} + ${param(1)}`), sql`t.week + interval '7 days'`, sql`t.skip + ${param(1)}`)}
        order by p.timestamp desc, p.id desc offset t.skip limit ${param(1)}
      ) k
    )`,
    /**
     * The posts before the cursor, from the newest week before the cursor's whose weeks up to the
     * cursor's hold `$1` posts: the page needs at most those (and it needs not the cursor's
     * position, which the same statement counts once for `at_or_before`).
     */
    after: sql<{ id: number; timestamp: Date }>`(
      with r as ${feedWeeks(cursorWeek)}
      ${newestInRange(weekHolding(param(1)), param(2), param(1))}
      order by p.timestamp desc, p.id desc limit ${param(1)}
    )`,
  };

  const allPosts = newestFirst(bucketed(db, 'all'));
  const byAuthor = newestFirst(bucketed(db, 'author'));
  // Named statements on their generic plans: whether the owner follows three users or thousands,
  // the plan is the same walk of the weeks' posts author by author, which is also the best one.
  const feed = newestFirst({
    keys: feedKeys,
    // The feed's weeks summed: one owner's rows, not a counter per author.
    total: sql<string>`(select coalesce(sum(fw.n), 0) from feed_weeks fw where fw.user_id = ${owner})`,
    // The weeks after the cursor's, then the posts at or after it in its week.
    atOrBefore: sql<string>`(
      (select coalesce(sum(fw.n), 0) from feed_weeks fw where fw.user_id = ${owner} and fw.week > ${cursorWeek})
      + (select count(*) from (${feedPosts(param(2), sql`${cursorWeek} + interval '7 days'`)}) here)
    )`,
  });

  const authorExists = prepare(
    db,
    db.selectFrom('users').select('users.id').where('users.id', '=', param<number>(1)),
    (id: number) => [id],
  );

  return {
    /**
     * Inserts a post and returns it with its author, and logs its `post` event (the same row), in one
     * statement: the event commits with the post or not at all.
     */
    async create(userId: number, text: string, timestamp: Date): Promise<PostWithAuthor> {
      const row = await db
        .with('p', (w) => w.insertInto('posts').values({ user_id: userId, text, timestamp }).returningAll())
        .with('post', (w) =>
          w.selectFrom('p').innerJoin('users', 'users.id', 'p.user_id').select(postWithAuthorColumns),
        )
        .with('event', (w) => logged(w, 'post', 'post', sql`to_jsonb(post)`))
        .selectFrom('post')
        .selectAll()
        .executeTakeFirstOrThrow();
      return postFromRow(row);
    },

    async findById(id: number): Promise<PostWithAuthor | undefined> {
      const row = await posts().select(postWithAuthorColumns).where('p.id', '=', id).executeTakeFirst();
      return row && postFromRow(row);
    },

    /** The author of a post (undefined: no such post). */
    async authorOf(id: number): Promise<number | undefined> {
      const row = await db.selectFrom('posts').select('user_id').where('id', '=', id).executeTakeFirst();
      return row?.user_id;
    },

    /** A new text for the author's post, and its `post_updated` event (the post as it is now): one statement. */
    async updateText(id: number, authorId: number, text: string): Promise<boolean> {
      const rows = await db
        .with('p', (w) =>
          w
            .updateTable('posts')
            .set({ text })
            .where('id', '=', id)
            .where('user_id', '=', authorId)
            .returningAll(),
        )
        .with('post', (w) =>
          w.selectFrom('p').innerJoin('users', 'users.id', 'p.user_id').select(postWithAuthorColumns),
        )
        .with('event', (w) => logged(w, 'post_updated', 'post', sql`to_jsonb(post)`))
        .selectFrom('post')
        .select('post.post_id')
        .execute();
      return rows.length === 1;
    },

    /** Deletes the author's post, and logs its `post_deleted` event: one statement. */
    async delete(id: number, authorId: number): Promise<boolean> {
      const rows = await db
        .with('p', (w) =>
          w
            .deleteFrom('posts')
            .where('id', '=', id)
            .where('user_id', '=', authorId)
            .returning(['posts.id', 'posts.user_id']),
        )
        .with('event', (w) =>
          logged(w, 'post_deleted', 'p', sql`jsonb_build_object('id', p.id, 'author_id', p.user_id)`),
        )
        .selectFrom('p')
        .select('p.id')
        .execute();
      return rows.length === 1;
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
