import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { annotate } from '@platform/schema';
import { ForceNotBoolean, InvalidRequest } from '../errors';
import { named, required } from '../kasm/fields';
import { EmptyResponse, operationsOf } from '../kasm/operation';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../kasm/paging';
import {
  CreateUserBody,
  DeleteUserBody,
  GetUserBody,
  GetUsersBody,
  UpdateUserBody,
  UpdateUserNameBody,
  UpdateUserPasswordBody,
} from './body';
import { UserResponse, UsersResponse } from './schemas';
import { createUsersService } from './service';

const operation = operationsOf('users');
const userResponse = (description: string) => annotate(UserResponse, { description });

/** The id an update names, as given (`Invalid Request` without a target or `user_id`). */
const targetId = (target: { user_id?: string | null }) => required(named(target.user_id), InvalidRequest);

const usersRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const users = createUsersService(app.database.db, app.config);

  app.post(
    '/get_users',
    operation({
      access: { permission: 'Users View', writes: false },
      summary: 'List users',
      description:
        'Users ordered by creation (oldest first, then by id), with `total`, the number of all users. Without `page` every user ' +
        'is returned (clients look users up on their side); with `page` (1-based) one page of `page_size` users ' +
        `(1..${MAX_PAGE_SIZE}, default ${DEFAULT_PAGE_SIZE}). A page past the end is empty.`,
      body: GetUsersBody,
      response: annotate(UsersResponse, { description: 'Users and their total' }),
    }),
    async (request) => users.list(request.body),
  );

  app.post(
    '/get_user',
    operation({
      access: { permission: 'Users View', writes: false },
      summary: 'Get a user',
      description:
        'The user named by `target_user.user_id`, or else by `target_user.username` (matched trimmed and case-insensitively). ' +
        'No target: `Invalid Request`; a malformed or unknown id or an unknown name: `Unknown User`.',
      body: GetUserBody,
      response: userResponse('The user'),
    }),
    async (request) => ({ user: await users.find(request.body.target_user) }),
  );

  app.post(
    '/create_user',
    operation({
      access: { permission: 'Users Create', writes: true },
      summary: 'Create a user',
      description:
        'Creates a local user who joins "All Users" (in the same transaction). `username` is required, trimmed and lowercased, and ' +
        'unique (`Error creating user (<username>): (User already exists)`). `first_name`, `last_name`, `organization` and `phone` ' +
        'are cut to 64 characters. The password is stored as an argon2id hash (none when absent or empty); the password rules apply ' +
        'only when `ENFORCE_PASSWORD_RULES_ON_CREATE` is on. `locked: true` is kept.',
      body: CreateUserBody,
      response: userResponse('The created user'),
    }),
    async (request) => {
      const target = required(request.body.target_user);
      return { user: await users.create({ ...target, username: required(named(target.username)) }) };
    },
  );

  app.post(
    '/update_user',
    operation({
      access: { permission: 'Users Modify', writes: true },
      summary: 'Update a user',
      description:
        'Changes the present, non-null fields of the user `target_user.user_id`; absent or null fields are left unchanged. ' +
        '`username` is trimmed, lowercased and unique (`Username already in use`); names, organization and phone are cut to 64 ' +
        'characters. A `password` must follow the password rules; setting one unlocks the user (even with `locked: true` in the ' +
        'same request).',
      body: UpdateUserBody,
      response: userResponse('The updated user'),
    }),
    async (request) => {
      const target = request.body.target_user ?? {};
      return { user: await users.update(targetId(target), target) };
    },
  );

  app.post(
    '/delete_user',
    operation({
      access: { permission: 'Users Delete', writes: true },
      summary: 'Delete a user',
      description:
        'Deletes the user `target_user.user_id` and their memberships. `force` must be a boolean when given (default false); ' +
        'it exists for Kasm compatibility, where it allows deleting a user with running sessions: sessions do not exist here, so ' +
        'it has no further effect. A malformed or unknown id: `Unknown user (<user_id>)`.',
      body: DeleteUserBody,
      response: EmptyResponse('The user is deleted'),
    }),
    async (request) => {
      const rawId = required(named(request.body.target_user?.user_id));
      const force = request.body.force;
      if (force !== undefined && force !== null && typeof force !== 'boolean') throw new ForceNotBoolean();
      await users.delete(rawId);
      return {};
    },
  );

  app.post(
    '/update_user_password',
    operation({
      access: { permission: 'Users Modify', writes: true },
      summary: 'Set a user\u2019s password',
      description:
        'Sets the password of the user `target_user.user_id` (required, with `target_user.password`, else ' +
        '`Invalid Request: Missing required parameters`). The password must follow the password rules; setting it unlocks the user. ' +
        'An extension the real client calls; not a Kasm endpoint.',
      body: UpdateUserPasswordBody,
      response: userResponse('The updated user'),
    }),
    async (request) => {
      const target = request.body.target_user ?? {};
      const rawId = targetId(target);
      return { user: await users.setPassword(rawId, required(target.password)) };
    },
  );

  app.post(
    '/update_user_name',
    operation({
      access: { permission: 'Users Modify', writes: true },
      summary: 'Set a user\u2019s name',
      description:
        'Changes `first_name` and/or `last_name` (cut to 64 characters) of the user `target_user.user_id`; absent or null names ' +
        'are left unchanged, other fields are ignored. An extension the real client calls; not a Kasm endpoint.',
      body: UpdateUserNameBody,
      response: userResponse('The updated user'),
    }),
    async (request) => {
      const target = request.body.target_user ?? {};
      return { user: await users.setName(targetId(target), target) };
    },
  );
};

export default usersRoutes;
