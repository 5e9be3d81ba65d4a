import type { Kysely } from 'kysely';
import type { NewUser, WorkspaceDatabase } from './db/schema';

const BATCH = 500;

/** The statements only seeding needs: many users, groups and memberships at once; existing names are left alone. */
export function seedRepository(db: Kysely<WorkspaceDatabase>) {
  return {
    async insertUsers(users: NewUser[]): Promise<string[]> {
      const ids: string[] = [];
      for (let i = 0; i < users.length; i += BATCH) {
        const rows = await db
          .insertInto('users')
          .values(users.slice(i, i + BATCH))
          .onConflict((oc) => oc.column('username').doNothing())
          .returning('id')
          .execute();
        ids.push(...rows.map((r) => r.id));
      }
      return ids;
    },

    async insertGroups(groups: { name: string; description: string; priority: number }[]): Promise<string[]> {
      if (!groups.length) return [];
      const rows = await db
        .insertInto('groups')
        .values(groups)
        .onConflict((oc) => oc.column('name').doNothing())
        .returning('id')
        .execute();
      return rows.map((r) => r.id);
    },

    /** Groups a seeded user may join: every group but the system ones. */
    async joinableGroups(): Promise<string[]> {
      return (await db.selectFrom('groups').select('id').where('is_system', '=', false).execute()).map(
        (r) => r.id,
      );
    },

    async insertMemberships(pairs: { user_id: string; group_id: string }[]): Promise<number> {
      let added = 0;
      for (let i = 0; i < pairs.length; i += BATCH) {
        const rows = await db
          .insertInto('user_groups')
          .values(pairs.slice(i, i + BATCH))
          .onConflict((oc) => oc.columns(['user_id', 'group_id']).doNothing())
          .returning('user_id')
          .execute();
        added += rows.length;
      }
      return added;
    },
  };
}
