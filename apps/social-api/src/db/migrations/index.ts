import type { Migration } from '@platform/db';
import * as initial from './2026-11-22T1000_users_posts_followers_tokens';
import * as spentOAuth2States from './2026-11-22T1100_spent_oauth2_states';
import * as counters from './2026-11-25T1000_counters';
import * as userResetSecretEmailVerified from './2026-11-28T1200_user_reset_secret_email_verified';
import * as serviceSecrets from './2026-11-28T1300_service_secrets';
import * as postPositions from './2026-11-28T1400_post_positions';
import * as userPositions from './2026-11-28T1500_user_positions';
import * as followNames from './2026-11-28T1600_follow_names';
import * as feedWeeks from './2026-11-28T1700_feed_weeks';
import * as events from './2026-11-28T1800_events';

/** Every migration, in order; names sort by time. Never edit one that has shipped: add another. */
export const migrations: Record<string, Migration> = {
  '2026-11-22T1000_users_posts_followers_tokens': initial,
  '2026-11-22T1100_spent_oauth2_states': spentOAuth2States,
  '2026-11-25T1000_counters': counters,
  '2026-11-28T1200_user_reset_secret_email_verified': userResetSecretEmailVerified,
  '2026-11-28T1300_service_secrets': serviceSecrets,
  '2026-11-28T1400_post_positions': postPositions,
  '2026-11-28T1500_user_positions': userPositions,
  '2026-11-28T1600_follow_names': followNames,
  '2026-11-28T1700_feed_weeks': feedWeeks,
  '2026-11-28T1800_events': events,
};
