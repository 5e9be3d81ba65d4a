import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { annotate, Nullable } from '@platform/schema';
import { OperationBody } from '../wire/operation';
import { PageField, PageSizeField } from '../wire/paging';
import { IdInput } from '../wire/kasm';

/*
 * Request bodies declare only types: every field is optional, so each operation answers a missing
 * field with Kasm's own message. Types are strict (bodies are not coerced), and a field that is
 * present and `null` counts as absent ("leave unchanged").
 */

const Body = OperationBody;

const optional = <T extends TSchema>(schema: T, description: string) =>
  Type.Optional(Nullable(annotate(schema, { description })));

const UserId = (description = 'The user (32 hex characters; dashed UUIDs accepted)') =>
  optional(IdInput, description);
// NUL characters are refused for every body by the platform's error path.
const Text = (description: string) => optional(Type.String(), description);
/**
 * What Kasm's `username` column holds (varchar 255); longer names would also overflow the unique
 * index's row limit (a 500) rather than be refused.
 */
export const MAX_USERNAME_LENGTH = 255;
const Username = (description: string) =>
  optional(Type.String({ maxLength: MAX_USERNAME_LENGTH }), description);
const Flag = (description: string) => optional(Type.Boolean(), description);

const FIELDS = {
  first_name: Text('Cut to 64 characters'),
  last_name: Text('Cut to 64 characters'),
  organization: Text('Free text, cut to 64 characters'),
  phone: Text('Cut to 64 characters'),
  notes: Text('Free text'),
  locked: Flag('A locked user cannot log in'),
  disabled: Flag('A disabled user cannot log in'),
};

const target = <T extends Record<string, TSchema>>(properties: T, description: string) =>
  Type.Optional(Nullable(Type.Object(properties, { description })));

export const GetUsersBody = Body({
  page: PageField,
  page_size: PageSizeField,
});

export const GetUserBody = Body({
  target_user: target(
    {
      user_id: UserId('The user by id (wins over `username`)'),
      username: Text('The user by name (trimmed, case-insensitive)'),
    },
    '`{user_id}` or `{username}`',
  ),
});

export const CreateUserBody = Body({
  target_user: target(
    {
      username: Username('Required; trimmed and lowercased; unique'),
      password: Text('Hashed with argon2id; never returned'),
      ...FIELDS,
    },
    'The new user; `username` is required',
  ),
});

export const UpdateUserBody = Body({
  target_user: target(
    {
      user_id: UserId(),
      username: Username('Trimmed and lowercased; unique'),
      password: Text('Checked against the password rules; setting it unlocks the user'),
      ...FIELDS,
    },
    '`user_id` is required; absent or null fields are left unchanged',
  ),
});

export const DeleteUserBody = Body({
  target_user: target({ user_id: UserId() }, '`user_id` is required'),
  force: Type.Optional(
    Type.Unknown({
      description: 'Boolean, default false: true deletes a user with live sessions, ending them',
    }),
  ),
});

export const UpdateUserPasswordBody = Body({
  target_user: target(
    {
      user_id: UserId(),
      password: Text('Required; checked against the password rules; setting it unlocks the user'),
    },
    '`user_id` and `password` are required',
  ),
});

export const UpdateUserNameBody = Body({
  target_user: target(
    {
      user_id: UserId(),
      first_name: FIELDS.first_name,
      last_name: FIELDS.last_name,
    },
    '`user_id` is required; absent or null names are left unchanged',
  ),
});

/** A body's `target_user`, when it has one. */
type TargetOf<T extends TSchema> = Static<T> extends { target_user?: infer U } ? NonNullable<U> : never;
export type UserRef = TargetOf<typeof GetUserBody>;
export type NewUserFields = TargetOf<typeof CreateUserBody>;
export type UserChanges = TargetOf<typeof UpdateUserBody>;
export type NameChanges = TargetOf<typeof UpdateUserNameBody>;
