import { sql, type Insertable, type Kysely, type Transaction, type Updateable } from 'kysely';
import { prepare, SQLSTATE, sqlState } from '@platform/db';
import type { GroupRow, GroupsTable, UserRow, WorkspaceDatabase } from '../db/schema';
import { deleteWhere } from '../db/statements';

export type NewGroup = Pick<Insertable<GroupsTable>, 'name' | 'priority' | 'description'>;
export type GroupChanges = Pick<Updateable<GroupsTable>, 'name' | 'priority' | 'description'>;

/** Whether a user and a group exist, and whether the user is a member of the group. */
export interface MembershipState {
  user: boolean;
  group: boolean;
  member: boolean;
}

/** Runs a statement that may hit the group-name unique constraint (the only one a write can break). */
async function unlessNameTaken<T>(statement: () => Promise<T>): Promise<T | 'name-taken'> {
  try {
    return await statement();
  } catch (error) {
    if (sqlState(error) === SQLSTATE.uniqueViolation) return 'name-taken';
    throw error;
  }
}

/** Every statement the groups feature runs: groups, and the user ↔ group memberships. */
export function createGroupsRepository(db: Kysely<WorkspaceDatabase>) {
  /** Every group, by priority (ascending: the lower number wins in Kasm), then name. */
  const allGroups = prepare(
    db,
    db.selectFrom('groups').selectAll().orderBy('priority').orderBy('name'),
    () => [],
  );

  return {
    listGroups: (): Promise<GroupRow[]> => allGroups(),

    async findGroup(id: string): Promise<GroupRow | undefined> {
      return db.selectFrom('groups').selectAll().where('id', '=', id).executeTakeFirst();
    },

    /** 'name-taken' when another group has the name (also when a concurrent create won). */
    async insertGroup(group: NewGroup): Promise<GroupRow | 'name-taken'> {
      return unlessNameTaken(() =>
        db.insertInto('groups').values(group).returningAll().executeTakeFirstOrThrow(),
      );
    },

    /** The updated group; undefined when it does not exist; 'name-taken' when another group has the name. */
    async updateGroup(id: string, changes: GroupChanges): Promise<GroupRow | undefined | 'name-taken'> {
      if (!Object.values(changes).some((v) => v !== undefined))
        return db.selectFrom('groups').selectAll().where('id', '=', id).executeTakeFirst();
      return unlessNameTaken(() =>
        db.updateTable('groups').set(changes).where('id', '=', id).returningAll().executeTakeFirst(),
      );
    },

    /**
     * Deletes a group that is not a system group, with its memberships and allowed images (foreign
     * key cascade), in one statement; a second one only tells why nothing was deleted.
     */
    async deleteGroup(id: string): Promise<'deleted' | 'system' | 'unknown'> {
      if (await deleteWhere(db, 'groups', { id, is_system: false })) return 'deleted';
      const group = await db.selectFrom('groups').select('is_system').where('id', '=', id).executeTakeFirst();
      return group?.is_system ? 'system' : 'unknown';
    },

    /**
     * Adds a membership in one statement when both the user and the group exist; false when nothing
     * was added (either is missing, or the user already is a member: concurrent identical requests
     * add one row and the others add nothing). `membership` tells which.
     */
    async addMember(userId: string, groupId: string): Promise<boolean> {
      try {
        const added = await db
          .insertInto('user_groups')
          .columns(['user_id', 'group_id'])
          .expression(
            db
              .selectFrom(['users', 'groups'])
              .select(['users.id as user_id', 'groups.id as group_id'])
              .where('users.id', '=', userId)
              .where('groups.id', '=', groupId),
          )
          .onConflict((oc) => oc.columns(['user_id', 'group_id']).doNothing())
          .returning('user_id')
          .executeTakeFirst();
        return added !== undefined;
      } catch (error) {
        // The user or the group was deleted between the statement's snapshot and its insert.
        if (sqlState(error) === SQLSTATE.foreignKeyViolation) return false;
        throw error;
      }
    },

    /**
     * Removes a membership (in a transaction when `executor` is one); false when there was none (the
     * user or group does not exist, or a concurrent move already took the row).
     */
    async removeMember(
      userId: string,
      groupId: string,
      executor: Kysely<WorkspaceDatabase> = db,
    ): Promise<boolean> {
      return deleteWhere(executor, 'user_groups', { user_id: userId, group_id: groupId });
    },

    /** One statement; an id that is undefined (malformed) names nothing. */
    async membership(userId: string | undefined, groupId: string | undefined): Promise<MembershipState> {
      const no = sql<boolean>`false`;
      const row = await db
        .selectNoFrom((eb) => [
          userId
            ? eb.exists(eb.selectFrom('users').select('id').where('id', '=', userId)).as('user')
            : no.as('user'),
          groupId
            ? eb.exists(eb.selectFrom('groups').select('id').where('id', '=', groupId)).as('group')
            : no.as('group'),
          userId && groupId
            ? eb
                .exists(
                  eb
                    .selectFrom('user_groups')
                    .select('user_id')
                    .where('user_id', '=', userId)
                    .where('group_id', '=', groupId),
                )
                .as('member')
            : no.as('member'),
        ])
        .executeTakeFirstOrThrow();
      return { user: row.user === true, group: row.group === true, member: row.member === true };
    },

    async countMembers(groupId: string): Promise<number> {
      const { total } = await db
        .selectFrom('user_groups')
        .select((eb) => eb.fn.countAll<string>().as('total'))
        .where('group_id', '=', groupId)
        .executeTakeFirstOrThrow();
      return Number(total);
    },

    /** The group's members by creation, then id (get_users' order); all of them without a page. */
    async listMembers(groupId: string, page?: { limit: number; offset: number }): Promise<UserRow[]> {
      let query = db
        .selectFrom('users')
        .innerJoin('user_groups', 'user_groups.user_id', 'users.id')
        .selectAll('users')
        .where('user_groups.group_id', '=', groupId)
        .orderBy('users.created')
        .orderBy('users.id');
      if (page) query = query.limit(page.limit).offset(page.offset);
      return query.execute();
    },

    /** Runs `work` in one transaction: committed when it resolves, rolled back when it throws. */
    transaction<T>(work: (trx: Transaction<WorkspaceDatabase>) => Promise<T>): Promise<T> {
      return db.transaction().execute(work);
    },

    /**
     * The user, locked until the transaction ends: moves of one user run one after the other (so
     * opposite concurrent moves cannot deadlock), and the user cannot be deleted meanwhile.
     */
    async lockUser(trx: Transaction<WorkspaceDatabase>, id: string): Promise<UserRow | undefined> {
      return trx.selectFrom('users').selectAll().where('id', '=', id).forNoKeyUpdate().executeTakeFirst();
    },

    /** A group by id or by exact name, kept from deletion until the transaction ends. */
    async lockGroup(
      trx: Transaction<WorkspaceDatabase>,
      by: { id: string } | { name: string },
    ): Promise<GroupRow | undefined> {
      const query = trx.selectFrom('groups').selectAll().forKeyShare();
      return (
        'id' in by ? query.where('id', '=', by.id) : query.where('name', '=', by.name)
      ).executeTakeFirst();
    },

    /** False when the user already is a member (never a second row). */
    async insertMembership(
      trx: Transaction<WorkspaceDatabase>,
      userId: string,
      groupId: string,
    ): Promise<boolean> {
      const added = await trx
        .insertInto('user_groups')
        .values({ user_id: userId, group_id: groupId })
        .onConflict((oc) => oc.columns(['user_id', 'group_id']).doNothing())
        .returning('user_id')
        .executeTakeFirst();
      return added !== undefined;
    },
  };
}

export type GroupsRepository = ReturnType<typeof createGroupsRepository>;
