import type { Kysely } from 'kysely';
import { insertMissing } from '../db/statements';
import type { NewUser, WorkspaceDatabase } from '../db/schema';

/** The statements only seeding needs: many users, groups and memberships at once; existing names are left alone. */
export function seedRepository(db: Kysely<WorkspaceDatabase>) {
  return {
    insertUsers(users: NewUser[]): Promise<string[]> {
      return insertMissing(db, 'users', users, ['username'], 'id');
    },

    insertGroups(groups: { name: string; description: string; priority: number }[]): Promise<string[]> {
      return insertMissing(db, 'groups', groups, ['name'], 'id');
    },

    /** Groups a seeded user may join: every group but the system ones. */
    async joinableGroups(): Promise<string[]> {
      return (await db.selectFrom('groups').select('id').where('is_system', '=', false).execute()).map(
        (r) => r.id,
      );
    },

    async insertMemberships(pairs: { user_id: string; group_id: string }[]): Promise<number> {
      return (await insertMissing(db, 'user_groups', pairs, ['user_id', 'group_id'], 'user_id')).length;
    },
  };
}
