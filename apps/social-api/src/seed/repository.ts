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
 * Posts inserted by one statement at most: the triggers hold a statement's changes in memory (for a
 * million posts, some 100 MB at the feeds' fan-out), and a million take some 25 s.
 */
const POSTS_AT_ONCE = 1_000_000;

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

    /**
     * Posts in bulk, in one transaction: each batch is staged in a temporary table, and the staged
     * posts go into `posts` in one statement per `POSTS_AT_ONCE`, so the triggers on posts (counters,
     * positions, the feeds' fan-out, migration 2026-11-28T1700_feed_weeks) run once for all of them.
     * Batch by batch, random authors would touch the weeks of all their followers' feeds again in
     * every batch (the star's 10,000 among them); at once, each feed's week is written once. Nothing
     * is seen before the commit, and then everything is counted. Returns how many posts went in.
     */
    async insertPostsInBulk(batches: Iterable<FakePosts>): Promise<number> {
      return db.transaction().execute(async (tx) => {
        await sql`create temporary table staged_posts (user_id integer, text text, timestamp timestamptz) on commit drop`.execute(
          tx,
        );
        let staged = 0;
        let added = 0;
        const flush = async () => {
          const result = await sql`
            insert into posts (user_id, text, timestamp) select user_id, text, timestamp from staged_posts`.execute(
            tx,
          );
          added += Number(result.numAffectedRows ?? 0);
          await sql`truncate staged_posts`.execute(tx);
          staged = 0;
        };
        for (const posts of batches) {
          await sql`
            insert into staged_posts (user_id, text, timestamp)
            select * from unnest(${posts.userIds}::int[], ${posts.texts}::text[], ${posts.timestamps}::timestamptz[])`.execute(
            tx,
          );
          staged += posts.userIds.length;
          if (staged >= POSTS_AT_ONCE) await flush();
        }
        if (staged > 0) await flush();
        return added;
      });
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
