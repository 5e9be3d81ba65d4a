import { createHash } from 'node:crypto';
import type { PublicUserRow } from './repository';
import type { User } from './schemas';

/** What a user's wire form derives from its id and address, made once per user and address. */
interface UserLinks {
  email: string;
  avatar: string;
  url: string;
  postsUrl: string;
}

/**
 * Each user's links by id, with the address the avatar was made from: an md5 per user and address,
 * not per user in every page, and the URLs as strings already made (a string built per row is a
 * rope that JSON.stringify copies flat again on every response). Keyed by id, not by address: an
 * address read from a row is a new string, which a Map hashes on every lookup.
 */
const links = new Map<number, UserLinks>();
/** Users remembered at most (then the oldest is forgotten): bounded whatever the number of users. */
const LINKS_CACHE_SIZE = 10_000;

function linksOf(userId: number, email: string): UserLinks {
  const known = links.get(userId);
  if (known !== undefined && known.email === email) return known;
  const made: UserLinks = {
    email,
    avatar: `https://www.gravatar.com/avatar/${createHash('md5').update(email.toLowerCase()).digest('hex')}?d=identicon`,
    url: `/api/users/${userId}`,
    postsUrl: `/api/users/${userId}/posts`,
  };
  if (known === undefined && links.size >= LINKS_CACHE_SIZE) links.delete(links.keys().next().value!);
  links.set(userId, made);
  return made;
}

export function serializeUser(row: PublicUserRow): User {
  const { avatar, url, postsUrl } = linksOf(row.id, row.email);
  return {
    id: row.id,
    url,
    username: row.username,
    email: row.email,
    has_password: row.has_password,
    avatar_url: avatar,
    about_me: row.about_me,
    first_seen: row.first_seen,
    last_seen: row.last_seen,
    posts_url: postsUrl,
  };
}
