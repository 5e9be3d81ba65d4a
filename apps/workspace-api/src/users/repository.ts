import { sql, type Kysely, type Transaction } from 'kysely';
import { param, prepare, SQLSTATE, sqlState } from '@platform/db';
import {
  LIVE_STATES,
  type NewUser,
  type UserRow,
  type UserUpdate,
  type WorkspaceDatabase,
} from '../db/schema';
import { deleteWhere } from '../db/statements';
import { ALL_USERS_GROUP_ID } from '../wire/kasm';

/** One membership of a user, with what the wire shows of the group. */
export interface MembershipRow {
  user_id: string;
  group_id: string;
  name: string;
}

/** A live session as get_users lists it with its user (timestamps as JSON writes them). */
export interface ListedSession {
  id: string;
  created: string;
  keepalive: string;
  expiration: string;
  hostname: string;
  web_port: number;
}

/** A user as get_users lists it: the columns the wire shows, the user's groups and live sessions, in order. */
export type ListedUserRow = Omit<UserRow, 'password_hash'> & {
  groups: { name: string; group_id: string }[];
  kasms: ListedSession[];
};

/** One page of users with their groups, and the number of all users. */
export interface UsersPage {
  rows: ListedUserRow[];
  total: number;
}

type ListedRow = { total: number } & (ListedUserRow | { [K in keyof ListedUserRow]: null });

/**
 * get_users in one statement: the total, the page in creation order (ties by id) and each user's
 * groups (by priority, the higher number first, then name) and, when `$3`, live sessions (oldest
 * first) as JSON. The left join keeps the total when the page is empty (no users, or a page past the
 * end). `$1` offset, `$2` limit (null: all), `$3` whether to read sessions.
 * A lateral join with a correlated JSON aggregate, written as SQL (Kysely's builders would only
 * spell it out longer); prepared once by the repository.
 */
const listWithGroups = sql<ListedRow>`
  select total.n as total, page.*
  from (select count(*)::int as n from users) as total
  left join lateral (
    select u.id, u.username, u.first_name, u.last_name, u.organization, u.phone, u.notes, u.locked,
      u.disabled, u.realm, u.last_session, u.created,
      coalesce((
        select json_agg(json_build_object('name', g.name, 'group_id', g.id) order by g.priority desc, g.name)
        from user_groups ug join groups g on g.id = ug.group_id
        where ug.user_id = u.id
      ), '[]') as groups,
      coalesce((
        select json_agg(json_build_object('id', s.id, 'created', s.created, 'keepalive', s.keepalive,
          'expiration', s.expiration, 'hostname', s.hostname, 'web_port', s.web_port) order by s.created, s.id)
        from sessions s
        where ${param<boolean>(3)} and s.user_id = u.id
          and s.state in ('requested', 'starting', 'running', 'stopping')
      ), '[]') as kasms
    from users u
    order by u.created, u.id
    offset ${param<number>(1)} limit ${param<number | null>(2)}
  ) as page on true
  order by page.created, page.id`;

export type DeleteResult =
  | { status: 'deleted'; sessions: { id: string; container_id: string | null }[] }
  | { status: 'unknown' }
  | { status: 'has-sessions'; count: number };

export type CreateResult = { status: 'created'; row: UserRow } | { status: 'username-taken' };
export type UpdateResult =
  { status: 'updated'; row: UserRow } | { status: 'unknown' } | { status: 'username-taken' };

/** The only unique column of `users` besides its generated id is `username`. */
const isUsernameTaken = (error: unknown) => sqlState(error) === SQLSTATE.uniqueViolation;

/** Every statement the users operations run. Ids are the database (dashed) form. */
export function createUsersRepository(db: Kysely<WorkspaceDatabase>) {
  const listPage = prepare(
    db,
    listWithGroups,
    (page: { offset: number; limit: number } | undefined, withSessions: boolean) => [
      // A page past the end is empty whatever its number: the offset is kept within bigint.
      Math.min(page?.offset ?? 0, Number.MAX_SAFE_INTEGER),
      page?.limit ?? null,
      withSessions,
    ],
  );
  const byId = prepare(
    db,
    db.selectFrom('users').selectAll().where('id', '=', param<string>(1)),
    (id: string) => [id],
  );
  const byUsername = prepare(
    db,
    db.selectFrom('users').selectAll().where('username', '=', param<string>(1)),
    (username: string) => [username],
  );
  /** `$1`: the user ids, as one array (one statement text whatever their number). */
  const membershipsOfIds = prepare(
    db,
    db
      .selectFrom('user_groups')
      .innerJoin('groups', 'groups.id', 'user_groups.group_id')
      .select(['user_groups.user_id', 'groups.id as group_id', 'groups.name'])
      .where('user_groups.user_id', '=', sql<string>`any(${param<string[]>(1)}::uuid[])`)
      .orderBy('groups.priority', 'desc')
      .orderBy('groups.name'),
    (userIds: string[]) => [userIds],
  );

  return {
    async findById(id: string): Promise<UserRow | undefined> {
      return (await byId(id))[0];
    },

    /** `username` must already be normalised (trimmed, lowercased), as stored. */
    async findByUsername(username: string): Promise<UserRow | undefined> {
      return (await byUsername(username))[0];
    },

    /**
     * A page of users (every user without `page`) with their groups, their live sessions when
     * `withSessions`, and the total, in one statement.
     */
    async listWithGroups(
      page: { offset: number; limit: number } | undefined,
      withSessions: boolean,
    ): Promise<UsersPage> {
      const rows = await listPage(page, withSessions);
      const total = rows[0]?.total ?? 0;
      // With no user on the page, the one row holds the total and nulls.
      const users = rows.filter((row): row is { total: number } & ListedUserRow => row.id !== null);
      return { rows: users, total };
    },

    /**
     * The groups of every given user, in one statement whatever their number: by priority (the
     * higher number first), then name.
     */
    async membershipsOf(userIds: string[]): Promise<MembershipRow[]> {
      return membershipsOfIds(userIds);
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

    /**
     * Deletes a user, their memberships and their sessions' rows (foreign key cascades), in one
     * transaction holding the user's row: a user with live sessions is refused unless `force`, and a
     * concurrent request_kasm (which locks the same row) either ran before and is counted, or finds
     * the user gone. The live sessions deleted are answered, for their containers to be removed.
     */
    async delete(id: string, force: boolean): Promise<DeleteResult> {
      return db.transaction().execute(async (trx: Transaction<WorkspaceDatabase>) => {
        const user = await trx
          .selectFrom('users')
          .select('id')
          .where('id', '=', id)
          .forUpdate()
          .executeTakeFirst();
        if (!user) return { status: 'unknown' as const };
        const live = await trx
          .selectFrom('sessions')
          .select(['id', 'container_id'])
          .where('user_id', '=', id)
          .where('state', 'in', LIVE_STATES)
          .execute();
        if (live.length && !force) return { status: 'has-sessions' as const, count: live.length };
        await deleteWhere(trx, 'users', { id });
        return { status: 'deleted' as const, sessions: live };
      });
    },
  };
}

export type UsersRepository = ReturnType<typeof createUsersRepository>;
