import { createHash } from 'node:crypto';
import type { PublicUserRow } from './repository';
import type { User } from './schemas';

/** Avatar URLs by email: an md5 per distinct address, not per user in every page. */
const avatars = new Map<string, string>();
/** Addresses remembered at most (then the oldest is forgotten): bounded whatever the number of users. */
const AVATAR_CACHE_SIZE = 10_000;

export function avatarUrl(email: string): string {
  let url = avatars.get(email);
  if (url === undefined) {
    url = `https://www.gravatar.com/avatar/${createHash('md5').update(email.toLowerCase()).digest('hex')}?d=identicon`;
    if (avatars.size >= AVATAR_CACHE_SIZE) avatars.delete(avatars.keys().next().value!);
    avatars.set(email, url);
  }
  return url;
}

export function serializeUser(row: PublicUserRow): User {
  return {
    id: row.id,
    url: `/api/users/${row.id}`,
    username: row.username,
    email: row.email,
    has_password: row.has_password,
    avatar_url: avatarUrl(row.email),
    about_me: row.about_me,
    first_seen: row.first_seen,
    last_seen: row.last_seen,
    posts_url: `/api/users/${row.id}/posts`,
  };
}
