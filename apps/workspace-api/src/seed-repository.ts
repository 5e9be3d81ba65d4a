import type { Kysely } from 'kysely';
import { inBatches } from './db/batches';
import type { NewUser, WorkspaceDatabase } from './db/schema';

/** The statements only seeding needs: many users, groups and memberships at once; existing names are left alone. */
export function seedRepository(db: Kysely<WorkspaceDatabase>) {
  return {
    async insertUsers(users: NewUser[]): Promise<string[]> {
      const rows = await inBatches(users, (batch) =>
        db
          .insertInto('users')
          .values(batch)
          .onConflict((oc) => oc.column('username').doNothing())
          .returning('id')
          .execute(),
      );
      return rows.map((r) => r.id);
    },

    async insertGroups(groups: { name: string; description: string; priority: number }[]): Promise<string[]> {
      const rows = await inBatches(groups, (batch) =>
        db
          .insertInto('groups')
          .values(batch)
          .onConflict((oc) => oc.column('name').doNothing())
          .returning('id')
          .execute(),
      );
      return rows.map((r) => r.id);
    },

    /** Groups a seeded user may join: every group but the system ones. */
    async joinableGroups(): Promise<string[]> {
      return (await db.selectFrom('groups').select('id').where('is_system', '=', false).execute()).map(
        (r) => r.id,
      );
    },

    async insertMemberships(pairs: { user_id: string; group_id: string }[]): Promise<number> {
      const added = await inBatches(pairs, (batch) =>
        db
          .insertInto('user_groups')
          .values(batch)
          .onConflict((oc) => oc.columns(['user_id', 'group_id']).doNothing())
          .returning('user_id')
          .execute(),
      );
      return added.length;
    },
  };
}
