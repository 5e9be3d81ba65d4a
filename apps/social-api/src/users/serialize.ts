import { createHash } from 'node:crypto';
import type { PublicUserRow } from './repository';
import type { User } from './schemas';

export const avatarUrl = (email: string) =>
  `https://www.gravatar.com/avatar/${createHash('md5').update(email.toLowerCase()).digest('hex')}?d=identicon`;

export function serializeUser(row: PublicUserRow): User {
  return {
    id: row.id,
    url: `/api/users/${row.id}`,
    username: row.username,
    email: row.email,
    has_password: row.has_password,
    avatar_url: avatarUrl(row.email),
    about_me: row.about_me,
    first_seen: row.first_seen.toISOString(),
    last_seen: row.last_seen.toISOString(),
    posts_url: `/api/users/${row.id}/posts`,
  };
}
