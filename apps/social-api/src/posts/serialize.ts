import { serializeUser } from '../users/serialize';
import type { PostWithAuthor } from './repository';
import type { Post } from './schemas';

/** A post as the API writes it (its pages, its own URL, the live streams). */
export const serializePost = (p: PostWithAuthor): Post => ({
  id: p.id,
  url: `/api/posts/${p.id}`,
  text: p.text,
  timestamp: p.timestamp,
  author: serializeUser(p.author),
});
