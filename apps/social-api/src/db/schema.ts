import type { Generated, Insertable, Selectable, Updateable } from 'kysely';
import type { EventsTable, ServiceSecretsTable } from '@platform/db';

export interface UsersTable {
  id: Generated<number>;
  /** Collation "C": one ordering (and one `after` cursor meaning), whatever the server's locale. */
  username: string;
  email: string;
  password_hash: string | null;
  about_me: string | null;
  /** timestamptz(3): millisecond precision, so what the API emits is exactly what is stored. */
  first_seen: Generated<Date>;
  last_seen: Generated<Date>;
  /** Counters kept by triggers in the transaction of every write (migration 2026-11-25T1000_counters). */
  posts_count: Generated<number>;
  followers_count: Generated<number>;
  following_count: Generated<number>;
  /**
   * Random per user, part of every reset link's fingerprint; drawn by the column default and again by
   * a trigger whenever the password changes (migration 2026-11-28T1200).
   */
  reset_secret: Generated<string>;
  /** The address was proven (a provider's verified flag, or a reset through the mailed link); cleared when it changes. */
  email_verified: Generated<boolean>;
}
export type UserRow = Selectable<UsersTable>;
export type NewUserRow = Insertable<UsersTable>;
export type UserUpdate = Updateable<UsersTable>;

export interface PostsTable {
  id: Generated<number>;
  text: string;
  timestamp: Generated<Date>;
  user_id: number;
}
export type PostRow = Selectable<PostsTable>;

/**
 * The posts of a scope (0: all; else an author's), cut in their order (timestamp, id) into buckets
 * from `lo` to the next bucket's `lo`, each with its number of posts; kept by triggers (migration
 * 2026-11-28T1400_post_positions), so a page finds its position without walking the posts before it.
 */
export interface PostBucketsTable {
  scope: number;
  lo_ts: Date;
  lo_id: number;
  n: number;
}

/** An author's posts per week (7-day steps from 2000-01-03 UTC), kept by triggers: the feed's positions. */
export interface PostWeeksTable {
  user_id: number;
  week: Date;
  n: number;
}

/**
 * A feed's posts per week (the owner's own and those of everyone they follow, on post_weeks' grid),
 * fanned out on write by triggers (migration 2026-11-28T1700_feed_weeks): a feed's positions.
 */
export interface FeedWeeksTable {
  /** The feed's owner. */
  user_id: number;
  week: Date;
  n: number;
}

/** Users per range of 1,024 ids (`lo`, a multiple of 1,024), kept by triggers (migration 2026-11-28T1500). */
export interface UserBucketsTable {
  lo: number;
  n: number;
}

/** "A follows B" is the row (follower_id = A, followed_id = B). */
export interface FollowersTable {
  follower_id: number;
  followed_id: number;
  /** The two users' names, kept by triggers (migration 2026-11-28T1600_follow_names): the lists' order. */
  follower_name: Generated<string>;
  followed_name: Generated<string>;
}

/** One access/refresh pair. Only SHA-256 digests of the secrets are stored. */
export interface TokensTable {
  id: Generated<string>;
  user_id: number;
  access_token_hash: string;
  access_expiration: Date;
  refresh_token_hash: string;
  refresh_expiration: Date;
}
export type TokenRow = Selectable<TokensTable>;

/** OAuth2 states already presented (each works once), kept until they would have expired. */
export interface SpentOAuth2StatesTable {
  state: string;
  expires: Date;
}

/** The one row of collection sizes, kept by triggers like the users' counters. */
export interface TotalsTable {
  id: Generated<boolean>;
  /** bigint: read as a string by pg. */
  posts: Generated<string>;
  users: Generated<string>;
}

export interface SocialDatabase {
  users: UsersTable;
  posts: PostsTable;
  post_buckets: PostBucketsTable;
  user_buckets: UserBucketsTable;
  post_weeks: PostWeeksTable;
  feed_weeks: FeedWeeksTable;
  followers: FollowersTable;
  tokens: TokensTable;
  spent_oauth2_states: SpentOAuth2StatesTable;
  totals: TotalsTable;
  /**
   * Secrets the service made for itself (migration 2026-11-28T1300_service_secrets): `secret_key`, the
   * key of tokens and signed cookies while SECRET_KEY is unset.
   */
  service_secrets: ServiceSecretsTable<'secret_key'>;
  /** The live streams' event log (migration 2026-11-28T1800_events: EVENT_LOG_V1 of @platform/db). */
  events: EventsTable;
}
