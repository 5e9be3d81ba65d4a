import type { FastifyRequest } from 'fastify';
import { annotate } from '@platform/schema';
import { keyHas, reads, writes } from '../auth/permissions';
import { ForceNotBoolean, InvalidRequest } from '../errors';
import { required, requiredNamed } from '../wire/fields';
import { answerEmpty, EmptyResponse, operationsOf } from '../wire/operation';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../wire/paging';
import {
  CreateUserBody,
  DeleteUserBody,
  GetUserBody,
  GetUsersBody,
  UpdateUserBody,
  UpdateUserNameBody,
  UpdateUserPasswordBody,
} from './body';
import { UserResponse, UsersWithKasmsResponse, UserWithKasmsResponse } from './schemas';
import { createUsersService } from './service';

const userResponse = (description: string) => annotate(UserResponse, { description });

/** The user an update names, as given (`Invalid Request` without a target or `user_id`), and its fields. */
const updateOf = <T extends { user_id?: string | null }>(body: { target_user?: T | null }) => {
  const target = body.target_user ?? ({} as T);
  return [requiredNamed(target.user_id, InvalidRequest), target] as const;
};

/** Kasm fills a user's `kasms` only for keys that may see sessions. */
const seesSessions = (request: FastifyRequest) => keyHas(request.apiKey!, 'Sessions View');

const KASMS =
  '`kasms` lists the user\u2019s live sessions (`{kasm_id, start_date, keepalive_date, expiration_date, server}`) when the ' +
  'key has `Sessions View`, and is empty otherwise.';

/** The users operations, answered by the users service. */
const operations = operationsOf('users', (app) =>
  createUsersService(app.database.db, app.config, app.sessions),
);

operations.add({
  name: 'get_users',
  access: reads('Users View'),
  summary: 'List users',
  description:
    'Users ordered by creation (oldest first, then by id), with `total`, the number of all users. Without `page` every user ' +
    'is returned (clients look users up on their side); with `page` (1-based) one page of `page_size` users ' +
    `(1..${MAX_PAGE_SIZE}, default ${DEFAULT_PAGE_SIZE}). A page past the end is empty. ${KASMS}`,
  body: GetUsersBody,
  response: annotate(UsersWithKasmsResponse, { description: 'Users and their total' }),
  answer: (body, users, request) => users.list(body, seesSessions(request)),
});

operations.add({
  name: 'get_user',
  access: reads('Users View'),
  summary: 'Get a user',
  description:
    'The user named by `target_user.user_id`, or else by `target_user.username` (matched trimmed and case-insensitively). ' +
    `No target: \`Invalid Request\`; a malformed or unknown id or an unknown name: \`Unknown User\`. ${KASMS}`,
  body: GetUserBody,
  response: annotate(UserWithKasmsResponse, { description: 'The user' }),
  answer: async (body, users, request) => ({
    user: await users.find(body.target_user, seesSessions(request)),
  }),
});

operations.add({
  name: 'create_user',
  access: writes('Users Create'),
  summary: 'Create a user',
  description:
    'Creates a local user who joins "All Users" (in the same transaction). `username` is required, trimmed and lowercased, and ' +
    'unique (`Error creating user (<username>): (User already exists)`). `first_name`, `last_name`, `organization` and `phone` ' +
    'are cut to 64 characters. The password is stored as an argon2id hash (none when absent or empty); the password rules apply ' +
    'only when `ENFORCE_PASSWORD_RULES_ON_CREATE` is on. `locked: true` is kept.',
  body: CreateUserBody,
  response: userResponse('The created user'),
  answer: async (body, users) => {
    const target = required(body.target_user);
    return { user: await users.create({ ...target, username: requiredNamed(target.username) }) };
  },
});

operations.add({
  name: 'update_user',
  access: writes('Users Modify'),
  summary: 'Update a user',
  description:
    'Changes the present, non-null fields of the user `target_user.user_id`; absent or null fields are left unchanged. ' +
    '`username` is trimmed, lowercased and unique (`Username already in use`); names, organization and phone are cut to 64 ' +
    'characters. A `password` must follow the password rules; setting one unlocks the user (even with `locked: true` in the ' +
    'same request).',
  body: UpdateUserBody,
  response: userResponse('The updated user'),
  answer: async (body, users) => ({ user: await users.update(...updateOf(body)) }),
});

operations.add({
  name: 'delete_user',
  access: writes('Users Delete'),
  summary: 'Delete a user',
  description:
    'Deletes the user `target_user.user_id`, their memberships and their sessions. `force` must be a boolean when given ' +
    '(default false). A user with live sessions (requested, starting, running or stopping) is refused without `force`: ' +
    "`Users contains (<n>) kasms and 'force' option not set to True`; with `force: true` their sessions end and their " +
    'containers are removed before the answer. A malformed or unknown id: `Unknown user (<user_id>)`.',
  body: DeleteUserBody,
  response: EmptyResponse('The user is deleted'),
  answer: answerEmpty(async ({ target_user, force }, users) => {
    const rawId = requiredNamed(target_user?.user_id);
    if (force !== undefined && force !== null && typeof force !== 'boolean') throw new ForceNotBoolean();
    await users.delete(rawId, force === true);
  }),
});

operations.add({
  name: 'update_user_password',
  access: writes('Users Modify'),
  summary: 'Set a user\u2019s password',
  description:
    'Sets the password of the user `target_user.user_id` (required, with `target_user.password`, else ' +
    '`Invalid Request: Missing required parameters`). The password must follow the password rules; setting it unlocks the user. ' +
    'An extension the real client calls; not a Kasm endpoint.',
  body: UpdateUserPasswordBody,
  response: userResponse('The updated user'),
  answer: async (body, users) => {
    const [rawId, target] = updateOf(body);
    return { user: await users.setPassword(rawId, required(target.password)) };
  },
});

operations.add({
  name: 'update_user_name',
  access: writes('Users Modify'),
  summary: 'Set a user\u2019s name',
  description:
    'Changes `first_name` and/or `last_name` (cut to 64 characters) of the user `target_user.user_id`; absent or null names ' +
    'are left unchanged, other fields are ignored. An extension the real client calls; not a Kasm endpoint.',
  body: UpdateUserNameBody,
  response: userResponse('The updated user'),
  answer: async (body, users) => ({ user: await users.setName(...updateOf(body)) }),
});
export default operations.plugin;
