import { createHash } from 'node:crypto';
import type { PublicUserRow } from './repository';
import type { User } from './schemas';

/**
 * Avatar URLs by user id, each with the address it was made from: an md5 per user and address, not
 * per user in every page. Keyed by id, not by address: an address read from a row is a new string,
 * which a Map hashes on every lookup.
 */
const avatars = new Map<number, { email: string; url: string }>();
/** Users remembered at most (then the oldest is forgotten): bounded whatever the number of users. */
const AVATAR_CACHE_SIZE = 10_000;

export function avatarUrl(userId: number, email: string): string {
  const known = avatars.get(userId);
  if (known !== undefined && known.email === email) return known.url;
  const url = `https://www.gravatar.com/avatar/${createHash('md5').update(email.toLowerCase()).digest('hex')}?d=identicon`;
  if (known === undefined && avatars.size >= AVATAR_CACHE_SIZE) avatars.delete(avatars.keys().next().value!);
  avatars.set(userId, { email, url });
  return url;
}

export function serializeUser(row: PublicUserRow): User {
  return {
    id: row.id,
    url: `/api/users/${row.id}`,
    username: row.username,
    email: row.email,
    has_password: row.has_password,
    avatar_url: avatarUrl(row.id, row.email),
    about_me: row.about_me,
    first_seen: row.first_seen,
    last_seen: row.last_seen,
    posts_url: `/api/users/${row.id}/posts`,
  };
}
