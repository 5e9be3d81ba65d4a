import type { Kysely } from 'kysely';
import type { WorkspaceDatabase } from '../db/schema';
import {
  AlreadyMember,
  GroupExists,
  InvalidGroupId,
  InvalidPriority,
  InvalidUserId,
  MissingParameters,
  NotMember,
  SystemGroup,
} from '../errors';
import { given, lookup } from '../wire/fields';
import { paged, pageOf } from '../wire/paging';
import { parseId, toKasmId } from '../wire/kasm';
import { createUsersRepository } from '../users/repository';
import type { User } from '../users/schemas';
import { usersWithGroups } from '../users/service';
import { createGroupsRepository } from './repository';
import {
  PRIORITY_MAX,
  PRIORITY_MIN,
  type ChangeUserGroupBody,
  type CreateGroupBody,
  type Group,
  type UpdateGroupBody,
} from './schemas';
import { toGroup } from './serialize';

/** Names are trimmed; a blank name is a missing one. */
function groupName(value: string): string {
  const name = value.trim();
  if (!name) throw new MissingParameters();
  return name;
}

/** Kasm's 1..4095; any other number (a fraction too) is answered with the value as given. */
function priorityOf(value: number): number {
  if (!Number.isInteger(value) || value < PRIORITY_MIN || value > PRIORITY_MAX)
    throw new InvalidPriority(String(value));
  return value;
}

type NewGroupFields = NonNullable<CreateGroupBody['target_group']>;
type GroupChanges = NonNullable<UpdateGroupBody['target_group']>;
type GroupRef = ChangeUserGroupBody['old_group'];

/** A group named by `group_id` (which wins) or `name`; `by` is undefined when it cannot name a group. */
function groupRef(ref: GroupRef) {
  const id = given(ref?.group_id);
  if (id !== undefined) {
    const parsed = parseId(id);
    return { given: id, by: parsed ? { id: parsed } : undefined };
  }
  const name = given(ref?.name);
  if (name !== undefined) {
    const trimmed = name.trim();
    return { given: name, by: trimmed ? { name: trimmed } : undefined };
  }
  throw new MissingParameters();
}

/** Groups and memberships with Kasm's rules. Ids and names are as clients send them. */
export function createGroupsService(db: Kysely<WorkspaceDatabase>) {
  const groups = createGroupsRepository(db);
  const users = createUsersRepository(db);

  /**
   * Adds or removes a membership. When nothing changed it tells why: an unknown user, else an
   * unknown group (a malformed id is unknown, answered with the id as given), else `Unchanged`.
   */
  async function changeMembership(
    rawUser: string,
    rawGroup: string,
    change: (userId: string, groupId: string) => Promise<boolean>,
    Unchanged: new (userId: string, groupId: string) => Error,
  ): Promise<void> {
    const userId = parseId(rawUser);
    const groupId = parseId(rawGroup);
    if (userId && groupId && (await change(userId, groupId))) return;
    const state = await groups.membership(userId, groupId);
    if (!state.user) throw new InvalidUserId(rawUser);
    if (!state.group) throw new InvalidGroupId(rawGroup);
    // Nothing changed although both exist: the membership was (or was not) there already, perhaps
    // because of a concurrent request.
    throw new Unchanged(toKasmId(userId!), toKasmId(groupId!));
  }

  return {
    async list(): Promise<Group[]> {
      return (await groups.listGroups()).map(toGroup);
    },

    /** Checked in this order: a blank name, the priority, the name's uniqueness. */
    async create(fields: NewGroupFields & { name: string; priority: number }): Promise<Group> {
      const name = groupName(fields.name);
      const priority = priorityOf(fields.priority);
      const saved = await groups.insertGroup({ name, priority, description: fields.description ?? null });
      if (saved === 'name-taken') throw new GroupExists(name);
      return toGroup(saved);
    },

    /** Changes the present, non-null fields of a group (the system group too). */
    async update(rawId: string, fields: GroupChanges): Promise<Group> {
      const current = await lookup(
        rawId,
        (id) => groups.findGroup(id),
        () => new InvalidGroupId(rawId),
      );
      const givenName = given(fields.name);
      const givenPriority = given(fields.priority);
      const name = givenName === undefined ? undefined : groupName(givenName);
      const priority = givenPriority === undefined ? undefined : priorityOf(givenPriority);
      const saved = await groups.updateGroup(current.id, {
        name,
        priority,
        description: given(fields.description),
      });
      if (saved === 'name-taken') throw new GroupExists(name ?? current.name);
      if (!saved) throw new InvalidGroupId(rawId);
      return toGroup(saved);
    },

    async delete(rawId: string): Promise<void> {
      const id = parseId(rawId);
      const outcome = id === undefined ? 'unknown' : await groups.deleteGroup(id);
      if (outcome === 'unknown') throw new InvalidGroupId(rawId);
      if (outcome === 'system') throw new SystemGroup();
    },

    addMember(rawUser: string, rawGroup: string): Promise<void> {
      return changeMembership(rawUser, rawGroup, groups.addMember, AlreadyMember);
    },

    removeMember(rawUser: string, rawGroup: string): Promise<void> {
      return changeMembership(rawUser, rawGroup, groups.removeMember, NotMember);
    },

    /**
     * Moves a user from one group (by id or name) to another in one transaction, and answers the
     * user. A failed move changes nothing; of concurrent identical moves exactly one succeeds.
     */
    async move(rawUser: string, oldGroup: GroupRef, newGroup: GroupRef): Promise<User> {
      const from = groupRef(oldGroup);
      const to = groupRef(newGroup);
      const userId = parseId(rawUser);
      if (!userId) throw new InvalidUserId(rawUser);
      const user = await groups.transaction(async (trx) => {
        const row = await groups.lockUser(trx, userId);
        if (!row) throw new InvalidUserId(rawUser);
        const source = from.by && (await groups.lockGroup(trx, from.by));
        if (!source) throw new InvalidGroupId(from.given);
        const target = to.by && (await groups.lockGroup(trx, to.by));
        if (!target) throw new InvalidGroupId(to.given);
        if (!(await groups.removeMember(row.id, source.id, trx)))
          throw new NotMember(toKasmId(row.id), toKasmId(source.id));
        // Throwing rolls the removal back.
        if (target.id === source.id || !(await groups.insertMembership(trx, row.id, target.id)))
          throw new AlreadyMember(toKasmId(row.id), toKasmId(target.id));
        return row;
      });
      return (await usersWithGroups(users, [user]))[0];
    },

    /** A group's members (all, or one page) and their number; the group is checked before the paging. */
    async members(
      rawId: string,
      request: { page?: number | null; page_size?: number | null },
    ): Promise<{ users: User[]; total: number }> {
      const group = await lookup(
        rawId,
        (id) => groups.findGroup(id),
        () => new InvalidGroupId(rawId),
      );
      const { rows, total } = await paged(
        pageOf(request),
        () => groups.countMembers(group.id),
        (page) => groups.listMembers(group.id, page),
      );
      return { users: await usersWithGroups(users, rows), total };
    },
  };
}
