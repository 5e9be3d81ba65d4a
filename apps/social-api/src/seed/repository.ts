import { sql, type Kysely } from 'kysely';
import type { SocialDatabase } from '../db/schema';

export interface FakeUser {
  username: string;
  email: string;
  about_me: string;
}

/** Posts as parallel columns, the shape `unnest` takes them in (one array parameter per column). */
export interface FakePosts {
  userIds: number[];
  texts: string[];
  /** ISO 8601 instants (millisecond precision, like the column). */
  timestamps: string[];
}

/**
 * The statements only the fake data commands need: many rows at once. Posts and follows go in as
 * one array per column (`INSERT ... SELECT FROM unnest(...)`), so a batch of any size is three or
 * two parameters, far from the protocol's 65535-parameter limit, and one plan for every batch.
 */
export function createFakeRepository(db: Kysely<SocialDatabase>) {
  return {
    /**
     * Inserts the users no one has taken yet (a username or, whatever its case, an email already
     * in use, in the table or earlier in the batch, makes the row be skipped) and returns the new
     * ids. No password: `password_hash` stays null.
     */
    async insertUsersSkippingTaken(users: FakeUser[]): Promise<number[]> {
      if (!users.length) return [];
      const rows = await db
        .insertInto('users')
        .values(users)
        .onConflict((oc) => oc.doNothing())
        .returning('id')
        .execute();
      return rows.map((r) => r.id);
    },

    /** `followers[i]` follows `followed[i]`; pairs already there are skipped. Returns how many were added. */
    async insertFollows(followers: number[], followed: number[]): Promise<number> {
      if (!followers.length) return 0;
      const result = await sql`
        insert into followers (follower_id, followed_id)
        select * from unnest(${followers}::int[], ${followed}::int[])
        on conflict do nothing`.execute(db);
      return Number(result.numAffectedRows ?? 0);
    },

    /** Every user id, in one array (4 bytes a user on the wire, one JavaScript array here). */
    async userIds(): Promise<number[]> {
      const { rows } = await sql<{
        ids: number[];
      }>`select coalesce(array_agg(id order by id), '{}') as ids from users`.execute(db);
      return rows[0].ids;
    },

    async insertPosts(posts: FakePosts): Promise<number> {
      if (!posts.userIds.length) return 0;
      const result = await sql`
        insert into posts (user_id, text, timestamp)
        select * from unnest(${posts.userIds}::int[], ${posts.texts}::text[], ${posts.timestamps}::timestamptz[])`.execute(
        db,
      );
      return Number(result.numAffectedRows ?? 0);
    },

    /**
     * Fresh planner statistics right after a bulk insert: autovacuum analyses the tables later, but
     * the rest of the command (or the bench that follows it) should be planned on the new data now.
     */
    async analyze(tables: (keyof SocialDatabase)[]): Promise<void> {
      await sql`analyze ${sql.join(tables.map((t) => sql.table(t)))}`.execute(db);
    },
  };
}

export type FakeRepository = ReturnType<typeof createFakeRepository>;
