import type { Generated, Insertable, Selectable, Updateable } from 'kysely';

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
}

export interface PostsTable {
  id: Generated<number>;
  text: string;
  timestamp: Generated<Date>;
  user_id: number;
}

/** "A follows B" is the row (follower_id = A, followed_id = B). */
export interface FollowersTable {
  follower_id: number;
  followed_id: number;
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

/** OAuth2 states already presented (each works once), kept until they would have expired. */
export interface SpentOAuth2StatesTable {
  state: string;
  expires: Date;
}

export interface SocialDatabase {
  users: UsersTable;
  posts: PostsTable;
  followers: FollowersTable;
  tokens: TokensTable;
  spent_oauth2_states: SpentOAuth2StatesTable;
}

export type UserRow = Selectable<UsersTable>;
export type NewUserRow = Insertable<UsersTable>;
export type UserUpdate = Updateable<UsersTable>;
export type PostRow = Selectable<PostsTable>;
export type TokenRow = Selectable<TokensTable>;
