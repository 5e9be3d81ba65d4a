import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { GroupRow } from '../db/schema';
import {
  AlreadyMember,
  BadPaging,
  GroupExists,
  InvalidGroupId,
  InvalidPriority,
  InvalidUserId,
  MissingParameters,
  NotMember,
  SystemGroup,
} from '../errors';
import { operation } from '../kasm/operation';
import { parseId, toKasmId } from '../kasm/wire';
import { UserResponse, UsersResponse } from '../users/schemas';
import { serializeUser, serializeUsers } from '../users/serialize';
import { createGroupsRepository } from './repository';
import {
  ChangeUserGroupBody,
  CreateGroupBody,
  DEFAULT_PAGE_SIZE,
  DeleteGroupBody,
  EmptyResponse,
  GetGroupsBody,
  GetUsersGroupBody,
  GroupResponse,
  GroupsResponse,
  MAX_PAGE_SIZE,
  MembershipBody,
  PRIORITY_MAX,
  PRIORITY_MIN,
  UpdateGroupBody,
  type Group,
} from './schemas';

function toGroup(row: GroupRow): Group {
  return {
    group_id: toKasmId(row.id),
    name: row.name,
    description: row.description,
    priority: row.priority,
    is_system: row.is_system,
  };
}

const present = <T>(value: T | null | undefined): value is T => value !== undefined && value !== null;

/** A required field: absent and null are both missing. */
function required<T>(value: T | null | undefined): T {
  if (!present(value)) throw new MissingParameters();
  return value;
}

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

/** A group named by `group_id` (which wins) or `name`; `by` is undefined when it cannot name a group. */
function groupRef(ref: { group_id?: string | null; name?: string | null } | null | undefined) {
  if (ref && present(ref.group_id)) {
    const id = parseId(ref.group_id);
    return { given: ref.group_id, by: id ? { id } : undefined };
  }
  if (ref && present(ref.name)) {
    const name = ref.name.trim();
    return { given: ref.name, by: name ? { name } : undefined };
  }
  throw new MissingParameters();
}

/** get_users' paging: undefined (every row) without `page`. */
function pageOf(page: number | null | undefined, pageSize: number | null | undefined) {
  if (present(pageSize) && (pageSize < 1 || pageSize > MAX_PAGE_SIZE)) throw new BadPaging();
  if (!present(page)) return undefined;
  if (page < 1) throw new BadPaging();
  const limit = pageSize ?? DEFAULT_PAGE_SIZE;
  return { limit, offset: (page - 1) * limit };
}

const MEMBERSHIP_CHECKS =
  'A malformed id is answered like an unknown one, with the id as given; the user is checked before the group.';

const groupsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const groups = createGroupsRepository(app.database.db);

  const list = operation(
    { permission: 'Groups View', writes: false },
    'groups',
    'List groups',
    'Every group, ordered by `priority` (ascending: the lower number wins when group settings layer), then `name`. ' +
      'The default group All Users has the fixed id `68d557ac4cac42cca9f31c7c853de0f3` and `is_system: true`.',
  );
  app.post(
    '/get_groups',
    {
      config: list.config,
      schema: { ...list.schema, body: GetGroupsBody, response: { 200: GroupsResponse, ...list.errors } },
    },
    async () => ({
      groups: (await groups.listGroups()).map(toGroup),
    }),
  );

  const create = operation(
    { permission: 'Groups Create', writes: true },
    'groups',
    'Create a group',
    '`target_group: {name*, priority*, description}`. The name is trimmed and unique as written (case-sensitive): ' +
      '`Group (<name>) already exists`, also when concurrent requests create the same name (exactly one succeeds). ' +
      `\`priority\` is an integer ${PRIORITY_MIN}..${PRIORITY_MAX}; another number (a fraction too) answers \`Invalid priority value (<p>)\`, ` +
      'a string is a type error (400). A missing, null or blank `name`, or a missing or null `priority`, answers ' +
      '`Invalid Request: Missing required parameters`. Checked in that order: missing fields, priority, name.',
  );
  app.post(
    '/create_group',
    {
      config: create.config,
      schema: { ...create.schema, body: CreateGroupBody, response: { 200: GroupResponse, ...create.errors } },
    },
    async (request) => {
      const target = request.body.target_group;
      if (!target || !present(target.name) || !present(target.priority)) throw new MissingParameters();
      const name = groupName(target.name);
      const priority = priorityOf(target.priority);
      const saved = await groups.insertGroup({ name, priority, description: target.description ?? null });
      if (saved === 'name-taken') throw new GroupExists(name);
      return { group: toGroup(saved) };
    },
  );

  const update = operation(
    { permission: 'Groups Modify', writes: true },
    'groups',
    'Update a group',
    '`target_group: {group_id*, name, priority, description}`; absent or null fields stay unchanged. Checked in this order: ' +
      '`Invalid Request: Missing required parameters` (no `group_id`), `Invalid Group ID (<id as given>)` (malformed or unknown), ' +
      'a blank `name` (missing parameters), `Invalid priority value (<p>)`, `Group (<name>) already exists`. ' +
      'The system group may be renamed or re-prioritised (its id stays fixed).',
  );
  app.post(
    '/update_group',
    {
      config: update.config,
      schema: { ...update.schema, body: UpdateGroupBody, response: { 200: GroupResponse, ...update.errors } },
    },
    async (request) => {
      const target = request.body.target_group;
      if (!target || !present(target.group_id)) throw new MissingParameters();
      const given = target.group_id;
      const id = parseId(given);
      const current = id && (await groups.findGroup(id));
      if (!current) throw new InvalidGroupId(given);
      const name = present(target.name) ? groupName(target.name) : undefined;
      const priority = present(target.priority) ? priorityOf(target.priority) : undefined;
      const saved = await groups.updateGroup(current.id, {
        name,
        priority,
        description: target.description ?? undefined,
      });
      if (saved === 'name-taken') throw new GroupExists(name ?? current.name);
      if (!saved) throw new InvalidGroupId(given);
      return { group: toGroup(saved) };
    },
  );

  const remove = operation(
    { permission: 'Groups Delete', writes: true },
    'groups',
    'Delete a group',
    '`target_group: {group_id*}`. Removes the group with its memberships and its allowed workspaces. ' +
      '`Invalid Group ID (<id as given>)` for a malformed or unknown id; `Cannot delete a system group` for All Users.',
  );
  app.post(
    '/delete_group',
    {
      config: remove.config,
      schema: { ...remove.schema, body: DeleteGroupBody, response: { 200: EmptyResponse, ...remove.errors } },
    },
    async (request) => {
      const given = required(request.body.target_group?.group_id);
      const id = parseId(given);
      const outcome = id ? await groups.deleteGroup(id) : 'unknown';
      if (outcome === 'unknown') throw new InvalidGroupId(given);
      if (outcome === 'system') throw new SystemGroup();
      return {};
    },
  );

  const add = operation(
    { permission: 'Groups Modify', writes: true },
    'groups',
    'Add a user to a group',
    '`target_user: {user_id*}`, `target_group: {group_id*}`. Errors: `Invalid User ID (<id>)`, `Invalid Group ID (<id>)`, ' +
      '`User (<uid>) is already a member of group (<gid>)` (ids in 32-hex form; also for all but one of concurrent identical requests). ' +
      MEMBERSHIP_CHECKS,
  );
  app.post(
    '/add_user_group',
    {
      config: add.config,
      schema: { ...add.schema, body: MembershipBody, response: { 200: EmptyResponse, ...add.errors } },
    },
    async (request) => {
      const userGiven = required(request.body.target_user?.user_id);
      const groupGiven = required(request.body.target_group?.group_id);
      const userId = parseId(userGiven);
      const groupId = parseId(groupGiven);
      if (userId && groupId && (await groups.addMember(userId, groupId))) return {};
      const state = await groups.membership(userId, groupId);
      if (!state.user) throw new InvalidUserId(userGiven);
      if (!state.group) throw new InvalidGroupId(groupGiven);
      // Nothing was added although both exist: the membership was there (perhaps added concurrently).
      throw new AlreadyMember(toKasmId(userId!), toKasmId(groupId!));
    },
  );

  const removeMember = operation(
    { permission: 'Groups Modify', writes: true },
    'groups',
    'Remove a user from a group',
    '`target_user: {user_id*}`, `target_group: {group_id*}`. Errors: `Invalid User ID (<id>)`, `Invalid Group ID (<id>)`, ' +
      '`User (<uid>) is not a member of group (<gid>)` (ids in 32-hex form). Removing a user from All Users is allowed. ' +
      MEMBERSHIP_CHECKS,
  );
  app.post(
    '/remove_user_group',
    {
      config: removeMember.config,
      schema: {
        ...removeMember.schema,
        body: MembershipBody,
        response: { 200: EmptyResponse, ...removeMember.errors },
      },
    },
    async (request) => {
      const userGiven = required(request.body.target_user?.user_id);
      const groupGiven = required(request.body.target_group?.group_id);
      const userId = parseId(userGiven);
      const groupId = parseId(groupGiven);
      if (userId && groupId && (await groups.removeMember(userId, groupId))) return {};
      const state = await groups.membership(userId, groupId);
      if (!state.user) throw new InvalidUserId(userGiven);
      if (!state.group) throw new InvalidGroupId(groupGiven);
      throw new NotMember(toKasmId(userId!), toKasmId(groupId!));
    },
  );

  const change = operation(
    { permission: 'Groups Modify', writes: true },
    'groups',
    'Move a user from one group to another',
    'Extension. `target_user: {user_id*}`, `old_group` and `new_group` each `{group_id}` or `{name}` (exact name; the id wins when both are given). ' +
      'Removes the old membership and adds the new one in one transaction, and answers the user. Checked in this order: ' +
      '`Invalid User ID (<id>)`, `Invalid Group ID (<as given>)` for the old group then the new one, ' +
      '`User (<uid>) is not a member of group (<old gid>)`, `User (<uid>) is already a member of group (<new gid>)` ' +
      '(also when old and new are the same group). A failed move changes nothing; of concurrent identical moves exactly one succeeds.',
  );
  app.post(
    '/change_user_group',
    {
      config: change.config,
      schema: {
        ...change.schema,
        body: ChangeUserGroupBody,
        response: { 200: UserResponse, ...change.errors },
      },
    },
    async (request) => {
      const userGiven = required(request.body.target_user?.user_id);
      const from = groupRef(request.body.old_group);
      const to = groupRef(request.body.new_group);
      const userId = parseId(userGiven);
      if (!userId) throw new InvalidUserId(userGiven);
      const user = await groups.transaction(async (trx) => {
        const row = await groups.lockUser(trx, userId);
        if (!row) throw new InvalidUserId(userGiven);
        const oldGroup = from.by && (await groups.lockGroup(trx, from.by));
        if (!oldGroup) throw new InvalidGroupId(from.given);
        const newGroup = to.by && (await groups.lockGroup(trx, to.by));
        if (!newGroup) throw new InvalidGroupId(to.given);
        if (!(await groups.deleteMembership(trx, row.id, oldGroup.id)))
          throw new NotMember(toKasmId(row.id), toKasmId(oldGroup.id));
        // Throwing rolls the deletion back.
        if (newGroup.id === oldGroup.id || !(await groups.insertMembership(trx, row.id, newGroup.id))) {
          throw new AlreadyMember(toKasmId(row.id), toKasmId(newGroup.id));
        }
        return row;
      });
      return { user: await serializeUser(app.database.db, user) };
    },
  );

  const members = operation(
    { permission: 'Groups View', writes: false },
    'groups',
    "List a group's users",
    '`target_group: {group_id*}`, optional `page` (1-based) and `page_size` ' +
      `(1..${MAX_PAGE_SIZE}, ${DEFAULT_PAGE_SIZE} when \`page\` is given without it). Answers \`{users, total}\` ordered by \`created\`, then \`user_id\`; ` +
      '`total` counts every member. Without `page`, every member. Errors: `Invalid Group ID (<id as given>)`, then ' +
      '`Invalid Request: page and page_size must be positive` (out of range; a `page_size` out of range is refused even without `page`).',
  );
  app.post(
    '/get_users_group',
    {
      config: members.config,
      schema: {
        ...members.schema,
        body: GetUsersGroupBody,
        response: { 200: UsersResponse, ...members.errors },
      },
    },
    async (request) => {
      const { target_group, page, page_size } = request.body;
      const given = required(target_group?.group_id);
      const id = parseId(given);
      const group = id && (await groups.findGroup(id));
      if (!group) throw new InvalidGroupId(given);
      const paging = pageOf(page, page_size);
      const total = await groups.countMembers(group.id);
      // A page past the end is empty without asking (and no huge offset reaches the database).
      const rows = paging && paging.offset >= total ? [] : await groups.listMembers(group.id, paging);
      return { users: await serializeUsers(app.database.db, rows), total };
    },
  );
};

export default groupsRoutes;
