import { sql, type ExpressionBuilder, type Kysely, type Selectable, type Selection } from 'kysely';
import { isoTimestamp, param, prepare, SQLSTATE, sqlState } from '@platform/db';
import type { NewUserRow, SocialDatabase, UserUpdate, UsersTable } from '../db/schema';
import { MAX_LIMIT, pageFromRows, type PageRequest, type PageSource } from '../wire/pagination';
import { logged } from '../events/log';

/**
 * The user columns every user-returning query selects: never the hash, only whether there is one;
 * timestamps already in their wire form; the user's counters (a follow list's total is one of them).
 */
export const publicUserColumns = [
  'users.id',
  'users.username',
  'users.email',
  'users.about_me',
  isoTimestamp('users.first_seen').as('first_seen'),
  isoTimestamp('users.last_seen').as('last_seen'),
  sql<boolean>`users.password_hash is not null`.as('has_password'),
  'users.posts_count',
  'users.followers_count',
  'users.following_count',
] as const;

/** A user as those columns read it (the type follows the list, so the two cannot drift apart). */
export type PublicUserRow = Selection<SocialDatabase, 'users', (typeof publicUserColumns)[number]>;

/** Which unique rule a failed write broke, from the constraint (index) name. */
export function uniqueViolation(error: unknown): 'username' | 'email' | undefined {
  if (sqlState(error) !== SQLSTATE.uniqueViolation) return undefined;
  const { constraint, message } = error as { constraint?: string; message?: string };
  const name = constraint ?? message ?? '';
  if (name.includes('users_username_key')) return 'username';
  if (name.includes('users_email_key')) return 'email';
  return undefined;
}

export type UserWithHash = Selectable<UsersTable>;

type FollowDirection = 'following' | 'followers';

export function createUsersRepository(db: Kysely<SocialDatabase>) {
  const publicUsers = () => db.selectFrom('users').select(publicUserColumns);
  /**
   * The user of a page's key `k.id`, as `dressed`: each by its own lookup (a LATERAL subquery kept
   * whole by `offset 0`), so no plan joins a page to every user, whatever the planner guesses.
   */
  const userOfKey = (eb: ExpressionBuilder<SocialDatabase & { k: { id: number } }, 'k'>) =>
    eb
      .selectFrom('users')
      .select(publicUserColumns)
      .whereRef('users.id', '=', 'k.id')
      .modifyEnd(sql`offset 0`)
      .as('dressed');

  const byId = prepare(db, publicUsers().where('users.id', '=', param<number>(1)), (id: number) => [id]);
  const byUsername = prepare(
    db,
    publicUsers().where('users.username', '=', param<string>(1)),
    (username: string) => [username],
  );

  /**
   * One page of "whom $3 follows" / "who follows $3" by username, with its total from the owner's
   * counter (null: no such user) and, after a cursor, the members at or before it: one statement.
   * `$1` limit, `$2` offset or cursor. The members come from the follow rows' own copy of the names
   * (migration 2026-11-28T1600_follow_names): the page's ids are an index-only walk, the position a
   * range count of that index; only the page's users are read and formatted. The page's LATERAL join
   * gives one row even when it is empty; an offset at or past the total reads no row.
   */
  const followPage = (direction: FollowDirection, mode: PageRequest<string>['mode']) => {
    const [mine, theirs, name] =
      direction === 'following'
        ? (['follower_id', 'followed_id', 'followed_name'] as const)
        : (['followed_id', 'follower_id', 'follower_name'] as const);
    const members = () => db.selectFrom('followers as f').where(`f.${mine}`, '=', param<number>(3));
    const sizes = db
      .selectNoFrom([
        db
          .selectFrom('users as owner')
          .select(`owner.${direction}_count`)
          .where('owner.id', '=', param<number>(3))
          .as('total'),
        mode === 'after'
          ? members()
              .select((eb) => eb.fn.countAll<string>().as('n'))
              .where(`f.${name}`, '<=', param<string>(2))
              .as('at_or_before')
          : sql<string>`0`.as('at_or_before'),
      ])
      .as('c');
    const keys = members()
      .select([`f.${theirs} as id`, `f.${name} as name`])
      .orderBy(`f.${name}`)
      .limit(param<number>(1));
    const page = db
      .selectFrom(
        (mode === 'after'
          ? keys.where(`f.${name}`, '>', param<string>(2))
          : keys.where(sql<boolean>`${param(2)} < c.total`).offset(param<number>(2))
        ).as('k'),
      )
      .innerJoinLateral(userOfKey, (join) => join.onTrue())
      .selectAll('dressed')
      .orderBy('k.name');
    return prepare(
      db,
      db
        .selectFrom(sizes)
        .leftJoinLateral(page.as('page'), (join) => join.onTrue())
        .select(['c.total', 'c.at_or_before'])
        .selectAll('page'),
      (userId: number, request: PageRequest<string>) => [
        request.limit,
        request.mode === 'after' ? request.after : request.offset,
        userId,
      ],
      // A user followed by thousands and one followed by three: planned for each one's values.
      { plan: 'each-run' },
    );
  };
  const followPages = {
    following: { after: followPage('following', 'after'), offset: followPage('following', 'offset') },
    followers: { after: followPage('followers', 'after'), offset: followPage('followers', 'offset') },
  };

  /** "Who X follows" / "who follows X", by username, as one page source. */
  const followList = (userId: number, direction: FollowDirection): PageSource<PublicUserRow, string> => ({
    read: async (request) =>
      pageFromRows(await followPages[direction][request.mode](userId, request), userFromPageRow),
  });

  /** The follow edge of `$1` to `$2`, read, added (nothing when there) or removed. */
  const edge = (follower: number, followed: number) => [follower, followed];
  const isFollowing = prepare(
    db,
    db
      .selectFrom('followers')
      .select('follower_id')
      .where('follower_id', '=', param<number>(1))
      .where('followed_id', '=', param<number>(2)),
    edge,
  );
  /** Its `feed_changed` event, logged by the statement that follows or unfollows (see `logged`). */
  const feedChanged = (following: boolean) =>
    sql`jsonb_build_object('follower_id', f.follower_id, 'user_id', f.followed_id, 'following', ${sql.lit(following)})`;
  const follow = prepare(
    db,
    db
      .with('f', (w) =>
        w
          .insertInto('followers')
          .values({ follower_id: param<number>(1), followed_id: param<number>(2) })
          .onConflict((oc) => oc.doNothing())
          .returning(['follower_id', 'followed_id']),
      )
      .with('event', (w) => logged(w, 'feed_changed', 'f', feedChanged(true)))
      .selectFrom('f')
      .select('f.follower_id'),
    edge,
  );
  const unfollow = prepare(
    db,
    db
      .with('f', (w) =>
        w
          .deleteFrom('followers')
          .where('follower_id', '=', param<number>(1))
          .where('followed_id', '=', param<number>(2))
          .returning(['follower_id', 'followed_id']),
      )
      .with('event', (w) => logged(w, 'feed_changed', 'f', feedChanged(false)))
      .selectFrom('f')
      .select('f.follower_id'),
    edge,
  );

  /**
   * Every user by id, with the total from `totals`: offset pages only. The page's ids come from the
   * range of 1,024 ids that holds the offset (a running sum over `user_buckets`, migration
   * 2026-11-28T1500) and a walk inside it in users_pkey; only those users are read and formatted.
   */
  // The walk takes MAX_LIMIT and the page its first `$1` (as the posts' pages do; see their
  // `firstOfKeys`): the statement's generic plan then costs what a custom one does, and is kept.
  const allKeys = sql<{ id: number }>`(
    select k.id from (
      select k.id from (
        select t.lo, ${param(2)} - (t.through - t.n) as skip
        from (select b.lo, b.n, sum(b.n) over (order by b.lo rows unbounded preceding) as through from user_buckets b) t
        where t.through > ${param(2)}
        order by t.lo limit 1
      ) t
      cross join lateral (
        select u.id from users u where u.id >= t.lo order by u.id offset t.skip limit ${sql.lit(MAX_LIMIT)}
      ) k
    ) k
    order by k.id limit ${param(1)}
  )`;
  const allPage = prepare(
    db,
    db
      .selectFrom(
        db
          .selectNoFrom([
            db.selectFrom('totals').select('totals.users').as('total'),
            sql<string>`0`.as('at_or_before'),
          ])
          .as('c'),
      )
      .leftJoinLateral(
        db
          .selectFrom(allKeys.as('k'))
          .innerJoinLateral(userOfKey, (join) => join.onTrue())
          .selectAll('dressed')
          .where(sql<boolean>`${param(2)} < c.total`)
          .orderBy('k.id')
          .as('page'),
        (join) => join.onTrue(),
      )
      .select(['c.total', 'c.at_or_before'])
      .selectAll('page'),
    (request: PageRequest<never>) => [request.limit, request.mode === 'offset' ? request.offset : 0],
  );

  return {
    async create(user: NewUserRow): Promise<PublicUserRow> {
      return db.insertInto('users').values(user).returning(publicUserColumns).executeTakeFirstOrThrow();
    },

    async findById(id: number): Promise<PublicUserRow | undefined> {
      return (await byId(id))[0];
    },

    async findByUsername(username: string): Promise<PublicUserRow | undefined> {
      // No name holds a NUL (PostgreSQL text cannot), and the database would refuse one with an error.
      if (username.includes('\u0000')) return undefined;
      return (await byUsername(username))[0];
    },

    /**
     * Writes the `last_seen` of many users at once (the coalesced writes of authenticated requests),
     * never moving one back. Rows are locked in id order, the order every writer of users rows
     * follows (see the counters migration), so concurrent flushes and counter updates never deadlock.
     */
    async recordLastSeen(seen: ReadonlyMap<number, Date>): Promise<void> {
      if (!seen.size) return;
      const ids = [...seen.keys()];
      const times = ids.map((id) => seen.get(id)!.toISOString());
      await db.transaction().execute(async (tx) => {
        await sql`select 1 from users where id = any(${ids}::int[]) order by id for no key update`.execute(
          tx,
        );
        await sql`
          update users set last_seen = greatest(users.last_seen, seen.at)
          from unnest(${ids}::int[], ${times}::timestamptz[]) as seen(id, at)
          where users.id = seen.id`.execute(tx);
      });
    },

    findByEmail(email: string): Promise<PublicUserRow | undefined> {
      return publicUsers()
        .where(sql`lower(email)`, '=', email.toLowerCase())
        .executeTakeFirst();
    },

    /** A login name: a username first, else an email address (whatever its case). */
    async findForLogin(name: string): Promise<UserWithHash | undefined> {
      if (name.includes('\u0000')) return undefined;
      const rows = await db
        .selectFrom('users')
        .selectAll()
        .where((eb) => eb.or([eb('username', '=', name), eb(sql`lower(email)`, '=', name.toLowerCase())]))
        .execute();
      return rows.find((r) => r.username === name) ?? rows[0];
    },

    findWithHashByEmail(email: string): Promise<UserWithHash | undefined> {
      return db
        .selectFrom('users')
        .selectAll()
        .where(sql`lower(email)`, '=', email.toLowerCase())
        .executeTakeFirst();
    },

    /**
     * Sets a new hash only if the password is still `expected` (a reset link works once, even when
     * raced). `provenEmail`: the change came through a link mailed to that address, which proves the
     * address is the owner's; it must still be the account's (any case), and the account is marked so.
     * (A new `reset_secret` is drawn by the database's trigger whenever the hash changes.)
     */
    async replacePassword(
      id: number,
      expected: string | null,
      passwordHash: string,
      { provenEmail }: { provenEmail?: string } = {},
    ): Promise<boolean> {
      let update = db
        .updateTable('users')
        .set(
          provenEmail === undefined
            ? { password_hash: passwordHash }
            : { password_hash: passwordHash, email_verified: true },
        )
        .where('id', '=', id)
        .where(sql<boolean>`password_hash is not distinct from ${expected}`);
      if (provenEmail !== undefined) update = update.where(sql`lower(email)`, '=', provenEmail.toLowerCase());
      const result = await update.executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    },

    /** Who holds an address (any case), as an OAuth2 login needs to know: whether it was proven, and whether there is a password. */
    findForOAuth2(
      email: string,
    ): Promise<{ id: number; email_verified: boolean; has_password: boolean } | undefined> {
      return db
        .selectFrom('users')
        .select(['id', 'email_verified', sql<boolean>`password_hash is not null`.as('has_password')])
        .where(sql`lower(email)`, '=', email.toLowerCase())
        .executeTakeFirst();
    },

    /**
     * Marks the account's address as proven by a provider, if it still is `email` and still has no
     * password (a password set meanwhile may be someone else's: the caller then decides again).
     */
    async markPasswordlessEmailVerified(id: number, email: string): Promise<boolean> {
      const result = await db
        .updateTable('users')
        .set({ email_verified: true })
        .where('id', '=', id)
        .where(sql`lower(email)`, '=', email.toLowerCase())
        .where('password_hash', 'is', null)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    },

    async passwordHash(id: number): Promise<string | null | undefined> {
      const row = await db
        .selectFrom('users')
        .select('password_hash')
        .where('id', '=', id)
        .executeTakeFirst();
      return row?.password_hash;
    },

    /** Taken by someone other than `exceptId`? (The unique indexes decide races; this gives the message.) */
    async taken(field: 'username' | 'email', value: string, exceptId?: number): Promise<boolean> {
      let q = db.selectFrom('users').select('id');
      q =
        field === 'username'
          ? q.where('username', '=', value)
          : q.where(sql`lower(email)`, '=', value.toLowerCase());
      if (exceptId !== undefined) q = q.where('id', '<>', exceptId);
      return (await q.executeTakeFirst()) !== undefined;
    },

    async update(id: number, changes: UserUpdate): Promise<PublicUserRow | undefined> {
      if (Object.keys(changes).length === 0) return publicUsers().where('id', '=', id).executeTakeFirst();
      const write = (to: Kysely<SocialDatabase>) =>
        to
          .updateTable('users')
          .set(changes)
          .where('id', '=', id)
          .returning(publicUserColumns)
          .executeTakeFirst();
      if (changes.username === undefined) return write(db);
      // A rename rewrites the user's follow rows (migration 2026-11-28T1600): they are locked before
      // the user's row, the order an unfollow takes them in (its row, then its users' counters).
      return db.transaction().execute(async (tx) => {
        await sql`select 1 from followers where follower_id = ${id} or followed_id = ${id} order by follower_id, followed_id for update`.execute(
          tx,
        );
        return write(tx);
      });
    },

    /** All users by id, as a page source (no cursor). */
    all(): PageSource<PublicUserRow, never> {
      return { read: async (request) => pageFromRows(await allPage(request), userFromPageRow) };
    },

    following: (userId: number) => followList(userId, 'following'),
    followers: (userId: number) => followList(userId, 'followers'),

    async isFollowing(followerId: number, followedId: number): Promise<boolean> {
      return (await isFollowing(followerId, followedId)).length === 1;
    },

    /** False when already followed (nothing changes). A vanished user is a foreign key error. */
    async follow(followerId: number, followedId: number): Promise<boolean> {
      return (await follow(followerId, followedId)).length === 1;
    },

    /** False when not followed. */
    async unfollow(followerId: number, followedId: number): Promise<boolean> {
      return (await unfollow(followerId, followedId)).length === 1;
    },
  };
}

export type UsersRepository = ReturnType<typeof createUsersRepository>;

/** A user of a page row (see `pageFromRows`): absent in the one row of an empty page. */
const userFromPageRow = (row: { [K in keyof PublicUserRow]: PublicUserRow[K] | null }) =>
  row.id === null ? undefined : (row as PublicUserRow);
