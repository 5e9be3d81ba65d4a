import type { Migration } from '@platform/db';
import * as usersGroupsImages from './2026-11-22T0100_users_groups_images';
import * as sessions from './2026-11-28T2000_sessions';
import * as serviceSecrets from './2026-11-28T2100_service_secrets';

/** Every migration, in order; names sort by time. Never edit one that has shipped: add another. */
export const migrations: Record<string, Migration> = {
  '2026-11-22T0100_users_groups_images': usersGroupsImages,
  '2026-11-28T2000_sessions': sessions,
  '2026-11-28T2100_service_secrets': serviceSecrets,
};
