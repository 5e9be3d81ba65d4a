import { reads, writes } from '../auth/permissions';
import { required } from '../wire/fields';
import { answerEmpty, EmptyResponse, operationsOf } from '../wire/operation';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../wire/paging';
import { UserResponse, UsersResponse } from '../users/schemas';
import {
  ChangeUserGroupBody,
  CreateGroupBody,
  DeleteGroupBody,
  GetGroupsBody,
  GetUsersGroupBody,
  GroupResponse,
  GroupsResponse,
  MembershipBody,
  PRIORITY_MAX,
  PRIORITY_MIN,
  UpdateGroupBody,
} from './schemas';
import { createGroupsService } from './service';

const Done = EmptyResponse('Done');

const MEMBERSHIP_CHECKS =
  'A malformed id is answered like an unknown one, with the id as given; the user is checked before the group.';

/** The group a create names: `name` and `priority` required. */
const newGroupOf = ({ target_group }: CreateGroupBody) => {
  const target = required(target_group);
  return { ...target, name: required(target.name), priority: required(target.priority) };
};

/** The group an update names (required) and its changes. */
const groupChangesOf = ({ target_group }: UpdateGroupBody) => {
  const target = required(target_group);
  return [required(target.group_id), target] as const;
};

/** The user and the group a membership change names, both required. */
const membershipOf = (body: MembershipBody) =>
  [required(body.target_user?.user_id), required(body.target_group?.group_id)] as const;

/** The groups operations, answered by the groups service. */
const operations = operationsOf('groups', (app) => createGroupsService(app.database.db));

operations.add({
  name: 'get_groups',
  access: reads('Groups View'),
  summary: 'List groups',
  description:
    'Every group, ordered by `priority` (ascending: the lower number wins when group settings layer), then `name`. ' +
    'The default group All Users has the fixed id `68d557ac4cac42cca9f31c7c853de0f3` and `is_system: true`.',
  body: GetGroupsBody,
  response: GroupsResponse,
  answer: async (_body, groups) => ({ groups: await groups.list() }),
});

operations.add({
  name: 'create_group',
  access: writes('Groups Create'),
  summary: 'Create a group',
  description:
    '`target_group: {name*, priority*, description}`. The name is trimmed and unique as written (case-sensitive): ' +
    '`Group (<name>) already exists`, also when concurrent requests create the same name (exactly one succeeds). ' +
    `\`priority\` is an integer ${PRIORITY_MIN}..${PRIORITY_MAX}; another number (a fraction too) answers \`Invalid priority value (<p>)\`, ` +
    'a string is a type error (400). A missing, null or blank `name`, or a missing or null `priority`, answers ' +
    '`Invalid Request: Missing required parameters`. Checked in that order: missing fields, priority, name.',
  body: CreateGroupBody,
  response: GroupResponse,
  answer: async (body, groups) => ({ group: await groups.create(newGroupOf(body)) }),
});

operations.add({
  name: 'update_group',
  access: writes('Groups Modify'),
  summary: 'Update a group',
  description:
    '`target_group: {group_id*, name, priority, description}`; absent or null fields stay unchanged. Checked in this order: ' +
    '`Invalid Request: Missing required parameters` (no `group_id`), `Invalid Group ID (<id as given>)` (malformed or unknown), ' +
    'a blank `name` (missing parameters), `Invalid priority value (<p>)`, `Group (<name>) already exists`. ' +
    'The system group may be renamed or re-prioritised (its id stays fixed).',
  body: UpdateGroupBody,
  response: GroupResponse,
  answer: async (body, groups) => ({ group: await groups.update(...groupChangesOf(body)) }),
});

operations.add({
  name: 'delete_group',
  access: writes('Groups Delete'),
  summary: 'Delete a group',
  description:
    '`target_group: {group_id*}`. Removes the group with its memberships and its allowed workspaces. ' +
    '`Invalid Group ID (<id as given>)` for a malformed or unknown id; `Cannot delete a system group` for All Users.',
  body: DeleteGroupBody,
  response: Done,
  answer: answerEmpty((body, groups) => groups.delete(required(body.target_group?.group_id))),
});

operations.add({
  name: 'add_user_group',
  access: writes('Groups Modify'),
  summary: 'Add a user to a group',
  description:
    '`target_user: {user_id*}`, `target_group: {group_id*}`. Errors: `Invalid User ID (<id>)`, `Invalid Group ID (<id>)`, ' +
    '`User (<uid>) is already a member of group (<gid>)` (ids in 32-hex form; also for all but one of concurrent identical requests). ' +
    MEMBERSHIP_CHECKS,
  body: MembershipBody,
  response: Done,
  answer: answerEmpty((body, groups) => groups.addMember(...membershipOf(body))),
});

operations.add({
  name: 'remove_user_group',
  access: writes('Groups Modify'),
  summary: 'Remove a user from a group',
  description:
    '`target_user: {user_id*}`, `target_group: {group_id*}`. Errors: `Invalid User ID (<id>)`, `Invalid Group ID (<id>)`, ' +
    '`User (<uid>) is not a member of group (<gid>)` (ids in 32-hex form). Removing a user from All Users is allowed. ' +
    MEMBERSHIP_CHECKS,
  body: MembershipBody,
  response: Done,
  answer: answerEmpty((body, groups) => groups.removeMember(...membershipOf(body))),
});

operations.add({
  name: 'change_user_group',
  access: writes('Groups Modify'),
  summary: 'Move a user from one group to another',
  description:
    'Extension. `target_user: {user_id*}`, `old_group` and `new_group` each `{group_id}` or `{name}` (exact name; the id wins when both are given). ' +
    'Removes the old membership and adds the new one in one transaction, and answers the user. Checked in this order: ' +
    '`Invalid User ID (<id>)`, `Invalid Group ID (<as given>)` for the old group then the new one, ' +
    '`User (<uid>) is not a member of group (<old gid>)`, `User (<uid>) is already a member of group (<new gid>)` ' +
    '(also when old and new are the same group). A failed move changes nothing; of concurrent identical moves exactly one succeeds.',
  body: ChangeUserGroupBody,
  response: UserResponse,
  answer: async ({ target_user, old_group, new_group }, groups) => ({
    user: await groups.move(required(target_user?.user_id), old_group, new_group),
  }),
});

operations.add({
  name: 'get_users_group',
  access: reads('Groups View'),
  summary: "List a group's users",
  description:
    '`target_group: {group_id*}`, optional `page` (1-based) and `page_size` ' +
    `(1..${MAX_PAGE_SIZE}, ${DEFAULT_PAGE_SIZE} when \`page\` is given without it). Answers \`{users, total}\` ordered by \`created\`, then \`user_id\`; ` +
    '`total` counts every member. Without `page`, every member. Errors: `Invalid Group ID (<id as given>)`, then ' +
    '`Invalid Request: page and page_size must be positive` (out of range; a `page_size` out of range is refused even without `page`).',
  body: GetUsersGroupBody,
  response: UsersResponse,
  answer: (body, groups) => groups.members(required(body.target_group?.group_id), body),
});
export default operations.plugin;
