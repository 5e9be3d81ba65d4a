import type { Migration } from '@platform/db';
import * as postsAndReplies from './2026-11-22T0000_posts_and_replies';
import * as serviceSecrets from './2026-11-28T0000_service_secrets';
import * as events from './2026-12-01T0000_events';

/** Every migration, in order; names sort by time. Never edit one that has shipped: add another. */
export const migrations: Record<string, Migration> = {
  '2026-11-22T0000_posts_and_replies': postsAndReplies,
  '2026-11-28T0000_service_secrets': serviceSecrets,
  '2026-12-01T0000_events': events,
};
