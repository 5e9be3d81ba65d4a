import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Nullable } from '@platform/schema';
import { OperationBody } from '../wire/operation';
import { PageField, PageSizeField } from '../wire/paging';
import { IdInput, KasmId } from '../wire/kasm';

/** Kasm's priority range: when group settings layer, the lower number wins. */
export const PRIORITY_MIN = 1;
export const PRIORITY_MAX = 4095;

export const Group = Type.Object(
  {
    group_id: KasmId,
    name: Type.String(),
    description: Nullable(Type.String()),
    priority: Type.Integer({
      minimum: PRIORITY_MIN,
      maximum: PRIORITY_MAX,
      description: 'When group settings layer, the lower number wins',
    }),
    is_system: Type.Boolean({ description: 'true for the default group All Users, which cannot be deleted' }),
  },
  { $id: 'Group', description: 'A group (Kasm shape)' },
);
export type Group = Static<typeof Group>;

export const GroupResponse = Type.Object({ group: Type.Ref(Group) });
export const GroupsResponse = Type.Object({
  groups: Type.Array(Type.Ref(Group), { description: 'Ordered by priority (ascending), then name' }),
});

// Request fields declare only their types, all optional: each operation answers a missing field
// with Kasm's own message. Present and null means absent (on updates: unchanged).

/** What Kasm's group `name` column holds (varchar 255), and within the unique index's row limit. */
export const MAX_GROUP_NAME_LENGTH = 255;
const GroupName = Type.String({
  maxLength: MAX_GROUP_NAME_LENGTH,
  description: 'Trimmed; unique as written (case-sensitive); not empty',
});
const Priority = Type.Number({
  description: `An integer ${PRIORITY_MIN}..${PRIORITY_MAX}; any other number answers \`Invalid priority value (<p>)\`, a string is a type error (400)`,
});
const Description = Type.String({ description: 'Free text, stored as given' });
const GroupIdField = Type.Optional(Nullable(IdInput));

const UserTarget = Type.Object(
  { user_id: Type.Optional(Nullable(IdInput)) },
  { description: 'The user: `{user_id}`' },
);
const GroupIdTarget = Type.Object({ group_id: GroupIdField }, { description: 'The group: `{group_id}`' });
/** A group named by id or by name (change_user_group): the id wins when both are given. */
const GroupRefTarget = Type.Object(
  {
    group_id: GroupIdField,
    name: Type.Optional(Nullable(Type.String({ description: 'Exact (case-sensitive) name; trimmed' }))),
  },
  { description: 'A group by `group_id` or by `name` (the id wins when both are given)' },
);

const target = <T extends TSchema>(schema: T) => Type.Optional(Nullable(schema));

export const GetGroupsBody = OperationBody();

export const CreateGroupBody = OperationBody({
  target_group: target(
    Type.Object(
      {
        name: Type.Optional(Nullable(GroupName)),
        priority: Type.Optional(Nullable(Priority)),
        description: Type.Optional(Nullable(Description)),
      },
      { description: '`name` and `priority` are required' },
    ),
  ),
});
export type CreateGroupBody = Static<typeof CreateGroupBody>;

export const UpdateGroupBody = OperationBody({
  target_group: target(
    Type.Object(
      {
        group_id: GroupIdField,
        name: Type.Optional(Nullable(GroupName)),
        priority: Type.Optional(Nullable(Priority)),
        description: Type.Optional(Nullable(Description)),
      },
      { description: '`group_id` is required; absent or null fields stay unchanged' },
    ),
  ),
});
export type UpdateGroupBody = Static<typeof UpdateGroupBody>;

export const DeleteGroupBody = OperationBody({ target_group: target(GroupIdTarget) });
export type DeleteGroupBody = Static<typeof DeleteGroupBody>;

export const MembershipBody = OperationBody({
  target_user: target(UserTarget),
  target_group: target(GroupIdTarget),
});
export type MembershipBody = Static<typeof MembershipBody>;

export const ChangeUserGroupBody = OperationBody({
  target_user: target(UserTarget),
  old_group: target(GroupRefTarget),
  new_group: target(GroupRefTarget),
});
export type ChangeUserGroupBody = Static<typeof ChangeUserGroupBody>;

export const GetUsersGroupBody = OperationBody({
  target_group: target(GroupIdTarget),
  page: PageField,
  page_size: PageSizeField,
});
export type GetUsersGroupBody = Static<typeof GetUsersGroupBody>;
