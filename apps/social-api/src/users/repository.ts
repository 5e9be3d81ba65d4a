import { sql, type Kysely, type Selectable, type Selection } from 'kysely';
import { SQLSTATE, sqlState } from '@platform/db';
import type { NewUserRow, SocialDatabase, UserUpdate, UsersTable } from '../db/schema';
import type { PageRequest, PageSource } from '../pagination';

/** The user columns every user-returning query selects: never the hash, only whether there is one. */
export const publicUserColumns = [
  'users.id',
  'users.username',
  'users.email',
  'users.about_me',
  'users.first_seen',
  'users.last_seen',
  sql<boolean>`users.password_hash is not null`.as('has_password'),
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

export function createUsersRepository(db: Kysely<SocialDatabase>) {
  const publicUsers = () => db.selectFrom('users').select(publicUserColumns);

  /** "Who X follows" / "who follows X", by username, as one page source. */
  const followList = (
    userId: number,
    direction: 'following' | 'followers',
  ): PageSource<PublicUserRow, string> => {
    const [mine, theirs] =
      direction === 'following'
        ? (['follower_id', 'followed_id'] as const)
        : (['followed_id', 'follower_id'] as const);
    const members = () =>
      db
        .selectFrom('followers')
        .innerJoin('users', 'users.id', `followers.${theirs}`)
        .where(`followers.${mine}`, '=', userId);
    return {
      async count(after) {
        const row = await members()
          .select((eb) => [
            eb.fn.countAll<string>().as('total'),
            after === undefined
              ? sql<string>`0`.as('at_or_before')
              : sql<string>`count(*) filter (where users.username <= ${after})`.as('at_or_before'),
          ])
          .executeTakeFirstOrThrow();
        return { total: Number(row.total), atOrBefore: Number(row.at_or_before) };
      },
      page(request: PageRequest<string>) {
        let q = members().select(publicUserColumns).orderBy('users.username').limit(request.limit);
        q =
          request.mode === 'after' ? q.where('users.username', '>', request.after) : q.offset(request.offset);
        return q.execute();
      },
    };
  };

  return {
    async create(user: NewUserRow): Promise<PublicUserRow> {
      return db.insertInto('users').values(user).returning(publicUserColumns).executeTakeFirstOrThrow();
    },

    findById(id: number): Promise<PublicUserRow | undefined> {
      return publicUsers().where('id', '=', id).executeTakeFirst();
    },

    /** `last_seen` = now for a user acting without a token (DISABLE_AUTH). */
    touch(id: number, now: Date): Promise<PublicUserRow | undefined> {
      return db
        .updateTable('users')
        .set({ last_seen: now })
        .where('id', '=', id)
        .returning(publicUserColumns)
        .executeTakeFirst();
    },

    async findByUsername(username: string): Promise<PublicUserRow | undefined> {
      // No name holds a NUL (PostgreSQL text cannot), and the database would refuse one with an error.
      if (username.includes('\u0000')) return undefined;
      return publicUsers().where('username', '=', username).executeTakeFirst();
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

    /** Sets a new hash only if the password is still `expected` (a reset link works once, even when raced). */
    async replacePassword(id: number, expected: string | null, passwordHash: string): Promise<boolean> {
      const result = await db
        .updateTable('users')
        .set({ password_hash: passwordHash })
        .where('id', '=', id)
        .where(sql<boolean>`password_hash is not distinct from ${expected}`)
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
      return db
        .updateTable('users')
        .set(changes)
        .where('id', '=', id)
        .returning(publicUserColumns)
        .executeTakeFirst();
    },

    /** All users by id, as a page source (no cursor). */
    all(): PageSource<PublicUserRow, never> {
      return {
        async count() {
          const row = await db
            .selectFrom('users')
            .select((eb) => eb.fn.countAll<string>().as('total'))
            .executeTakeFirstOrThrow();
          return { total: Number(row.total), atOrBefore: 0 };
        },
        page: (request) =>
          publicUsers()
            .orderBy('id')
            .limit(request.limit)
            .offset(request.mode === 'offset' ? request.offset : 0)
            .execute(),
      };
    },

    following: (userId: number) => followList(userId, 'following'),
    followers: (userId: number) => followList(userId, 'followers'),

    async isFollowing(followerId: number, followedId: number): Promise<boolean> {
      const row = await db
        .selectFrom('followers')
        .select('follower_id')
        .where('follower_id', '=', followerId)
        .where('followed_id', '=', followedId)
        .executeTakeFirst();
      return row !== undefined;
    },

    /** False when already followed (nothing changes). A vanished user is a foreign key error. */
    async follow(followerId: number, followedId: number): Promise<boolean> {
      const rows = await db
        .insertInto('followers')
        .values({ follower_id: followerId, followed_id: followedId })
        .onConflict((oc) => oc.doNothing())
        .returning('follower_id')
        .execute();
      return rows.length === 1;
    },

    /** False when not followed. */
    async unfollow(followerId: number, followedId: number): Promise<boolean> {
      const rows = await db
        .deleteFrom('followers')
        .where('follower_id', '=', followerId)
        .where('followed_id', '=', followedId)
        .returning('follower_id')
        .execute();
      return rows.length === 1;
    },
  };
}

export type UsersRepository = ReturnType<typeof createUsersRepository>;
