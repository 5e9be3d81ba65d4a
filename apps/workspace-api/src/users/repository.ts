import type { Kysely, Transaction } from 'kysely';
import { SQLSTATE, sqlState } from '@platform/db';
import type { NewUser, UserRow, UserUpdate, WorkspaceDatabase } from '../db/schema';
import { deleteWhere } from '../db/statements';
import { ALL_USERS_GROUP_ID } from '../kasm/wire';

/** One membership of a user, with what the wire shows of the group. */
export interface MembershipRow {
  user_id: string;
  group_id: string;
  name: string;
}

export type CreateResult = { status: 'created'; row: UserRow } | { status: 'username-taken' };
export type UpdateResult =
  { status: 'updated'; row: UserRow } | { status: 'unknown' } | { status: 'username-taken' };

/** The only unique column of `users` besides its generated id is `username`. */
const isUsernameTaken = (error: unknown) => sqlState(error) === SQLSTATE.uniqueViolation;

/** Every statement the users operations run. Ids are the database (dashed) form. */
export function createUsersRepository(db: Kysely<WorkspaceDatabase>) {
  return {
    async findById(id: string): Promise<UserRow | undefined> {
      return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
    },

    /** `username` must already be normalised (trimmed, lowercased), as stored. */
    async findByUsername(username: string): Promise<UserRow | undefined> {
      return db.selectFrom('users').selectAll().where('username', '=', username).executeTakeFirst();
    },

    async count(): Promise<number> {
      const { n } = await db
        .selectFrom('users')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .executeTakeFirstOrThrow();
      return Number(n);
    },

    /** Users by creation, oldest first (ties by id); every user without `page`. */
    async list(page?: { offset: number; limit: number }): Promise<UserRow[]> {
      let query = db.selectFrom('users').selectAll().orderBy('created', 'asc').orderBy('id', 'asc');
      if (page) query = query.offset(page.offset).limit(page.limit);
      return query.execute();
    },

    /**
     * The groups of every given user, in one statement whatever their number: by priority (the
     * higher number first), then name.
     */
    async membershipsOf(userIds: string[]): Promise<MembershipRow[]> {
      return db
        .selectFrom('user_groups')
        .innerJoin('groups', 'groups.id', 'user_groups.group_id')
        .select(['user_groups.user_id', 'groups.id as group_id', 'groups.name'])
        .where('user_groups.user_id', 'in', userIds)
        .orderBy('groups.priority', 'desc')
        .orderBy('groups.name')
        .execute();
    },

    /**
     * Inserts a user and their "All Users" membership in one transaction. A unique violation on the
     * username (also when a concurrent create won the race) is a result, not an exception.
     */
    async create(user: NewUser): Promise<CreateResult> {
      try {
        const row = await db.transaction().execute(async (trx: Transaction<WorkspaceDatabase>) => {
          const inserted = await trx
            .insertInto('users')
            .values(user)
            .returningAll()
            .executeTakeFirstOrThrow();
          await trx
            .insertInto('user_groups')
            .values({ user_id: inserted.id, group_id: ALL_USERS_GROUP_ID })
            .execute();
          return inserted;
        });
        return { status: 'created', row };
      } catch (error) {
        if (isUsernameTaken(error)) return { status: 'username-taken' };
        throw error;
      }
    },

    /** Applies the changes in one statement; nothing to change answers the current row. */
    async update(id: string, changes: UserUpdate): Promise<UpdateResult> {
      try {
        const row = Object.keys(changes).length
          ? await db.updateTable('users').set(changes).where('id', '=', id).returningAll().executeTakeFirst()
          : await db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
        return row ? { status: 'updated', row } : { status: 'unknown' };
      } catch (error) {
        if (isUsernameTaken(error)) return { status: 'username-taken' };
        throw error;
      }
    },

    /** Deletes a user (memberships go with them); false when there was none. */
    async delete(id: string): Promise<boolean> {
      return deleteWhere(db, 'users', { id });
    },
  };
}

export type UsersRepository = ReturnType<typeof createUsersRepository>;
