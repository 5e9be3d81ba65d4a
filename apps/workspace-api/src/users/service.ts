import type { Kysely } from 'kysely';
import type { Config } from '../config';
import type { UserRow, UserUpdate, WorkspaceDatabase } from '../db/schema';
import {
  InvalidRequest,
  MissingParameters,
  UnknownUser,
  UnknownUserId,
  UserExists,
  UserHasSessions,
  UsernameInUse,
} from '../errors';
import type { SessionLifecycle } from '../sessions/lifecycle';
import { createSessionsRepository } from '../sessions/repository';
import { toUserKasm } from '../sessions/serialize';
import { given, lookup, named } from '../wire/fields';
import { pageOf } from '../wire/paging';
import { cut64 } from '../wire/kasm';
import type { NameChanges, NewUserFields, UserChanges, UserRef } from './body';
import { assertPasswordRules, hashPassword } from './passwords';
import { createUsersRepository, type UsersRepository } from './repository';
import type { User, UserWithKasms } from './schemas';
import { toListedUsers, toUsers } from './serialize';

/** Usernames are stored trimmed and lowercased. */
const normalizeUsername = (username: string) => username.trim().toLowerCase();

/** The changes a request's present, non-null name fields ask for (cut to 64 characters). */
function nameChanges(fields: NameChanges): UserUpdate {
  const changes: UserUpdate = {};
  const firstName = given(fields.first_name);
  const lastName = given(fields.last_name);
  if (firstName !== undefined) changes.first_name = cut64(firstName);
  if (lastName !== undefined) changes.last_name = cut64(lastName);
  return changes;
}

function profileChanges(fields: UserChanges): UserUpdate {
  const changes = nameChanges(fields);
  const organization = given(fields.organization);
  const phone = given(fields.phone);
  const notes = given(fields.notes);
  const locked = given(fields.locked);
  const disabled = given(fields.disabled);
  if (organization !== undefined) changes.organization = cut64(organization);
  if (phone !== undefined) changes.phone = cut64(phone);
  if (notes !== undefined) changes.notes = notes;
  if (locked !== undefined) changes.locked = locked;
  if (disabled !== undefined) changes.disabled = disabled;
  return changes;
}

/**
 * Users in Kasm's shape with their groups, in two statements whatever the number of users (the
 * rows, then all their memberships).
 */
export async function usersWithGroups(users: UsersRepository, rows: UserRow[]): Promise<User[]> {
  if (!rows.length) return [];
  return toUsers(rows, await users.membershipsOf(rows.map((r) => r.id)));
}

/** Users: lookups, creation and updates with Kasm's rules. Ids are as clients send them. */
export function createUsersService(
  db: Kysely<WorkspaceDatabase>,
  config: Pick<Config, 'argon2' | 'enforcePasswordRulesOnCreate'>,
  /** Removes the containers of the sessions a forced deletion ends (none without an engine). */
  sessionLifecycle?: SessionLifecycle,
) {
  const users = createUsersRepository(db);
  const sessions = createSessionsRepository(db);
  const hash = (password: string) => hashPassword(password, config.argon2);
  const withGroups = async (row: UserRow) => (await usersWithGroups(users, [row]))[0];

  /** The user an update names (`Unknown User` for a malformed or unknown id). */
  const findTarget = (rawId: string) =>
    lookup(
      rawId,
      (id) => users.findById(id),
      () => new UnknownUser(),
    );

  /** Sets a new password: rules first, then the argon2id hash; a new password unlocks the user. */
  async function passwordChanges(password: string): Promise<UserUpdate> {
    assertPasswordRules(password);
    return { password_hash: await hash(password), locked: false };
  }

  async function applyUpdate(id: string, changes: UserUpdate): Promise<User> {
    const result = await users.update(id, changes);
    if (result.status === 'unknown') throw new UnknownUser();
    if (result.status === 'username-taken') throw new UsernameInUse();
    return withGroups(result.row);
  }

  return {
    /**
     * Every user, or one page of them, with the number of all users, each with their live sessions
     * when `withSessions` (Kasm fills `kasms` only for keys with Sessions View): one statement.
     */
    async list(request: { page?: number | null; page_size?: number | null }, withSessions: boolean) {
      const { rows, total } = await users.listWithGroups(pageOf(request), withSessions);
      return { users: toListedUsers(rows), total };
    },

    /**
     * The user named by `user_id`, or else by `username` (trimmed, case-insensitive), with their live
     * sessions when `withSessions`.
     */
    async find(ref: UserRef | null | undefined, withSessions: boolean): Promise<UserWithKasms> {
      const userId = named(ref?.user_id);
      const username = named(ref?.username);
      let row: UserRow | undefined;
      if (userId !== undefined) row = await findTarget(userId);
      else if (username === undefined) throw new InvalidRequest();
      else row = await users.findByUsername(normalizeUsername(username));
      if (!row) throw new UnknownUser();
      const kasms = withSessions ? (await sessions.listLiveOfUsers([row.id])).map(toUserKasm) : [];
      return { ...(await withGroups(row)), kasms };
    },

    /**
     * Creates a user in "All Users". The password rules apply on creation only when the
     * configuration says so; like Kasm, an empty password is no password.
     */
    async create(fields: NewUserFields & { username: string }): Promise<User> {
      const username = normalizeUsername(fields.username);
      const password = fields.password || undefined;
      if (password !== undefined && config.enforcePasswordRulesOnCreate) assertPasswordRules(password);
      const result = await users.create({
        username,
        password_hash: password === undefined ? null : await hash(password),
        first_name: cut64(fields.first_name) ?? null,
        last_name: cut64(fields.last_name) ?? null,
        organization: cut64(fields.organization) ?? null,
        phone: cut64(fields.phone) ?? null,
        notes: fields.notes ?? null,
        locked: fields.locked ?? false,
        disabled: fields.disabled ?? false,
      });
      if (result.status === 'username-taken') throw new UserExists(username);
      return withGroups(result.row);
    },

    /** Changes the present, non-null fields; a password must follow the rules and unlocks the user. */
    async update(rawId: string, fields: UserChanges): Promise<User> {
      const row = await findTarget(rawId);
      const changes = profileChanges(fields);
      const username = given(fields.username);
      if (username !== undefined) {
        changes.username = normalizeUsername(username);
        if (!changes.username) throw new MissingParameters();
      }
      const password = given(fields.password);
      if (password !== undefined) Object.assign(changes, await passwordChanges(password));
      return applyUpdate(row.id, changes);
    },

    async setPassword(rawId: string, password: string): Promise<User> {
      const row = await findTarget(rawId);
      return applyUpdate(row.id, await passwordChanges(password));
    },

    async setName(rawId: string, fields: NameChanges): Promise<User> {
      const row = await findTarget(rawId);
      return applyUpdate(row.id, nameChanges(fields));
    },

    /**
     * Deletes a user and their memberships (`Unknown user (<id>)` for a malformed or unknown id). A
     * user with live sessions is refused unless `force`; then their sessions end with them and their
     * containers are removed (starts under way cancelled) before the answer.
     */
    async delete(rawId: string, force: boolean): Promise<void> {
      const result = await lookup(
        rawId,
        async (id) => {
          const deleted = await users.delete(id, force);
          return deleted.status === 'unknown' ? undefined : deleted;
        },
        () => new UnknownUserId(rawId),
      );
      if (result.status === 'has-sessions') throw new UserHasSessions(String(result.count));
      for (const session of result.sessions) sessionLifecycle?.cancelStart(session.id);
      await sessionLifecycle?.removeContainers(
        result.sessions.flatMap((s) => (s.container_id === null ? [] : [s.container_id])),
      );
    },
  };
}
