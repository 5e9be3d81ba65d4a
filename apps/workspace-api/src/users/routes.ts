import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { annotate } from '@platform/schema';
import type { UserRow, UserUpdate } from '../db/schema';
import {
  BadPaging,
  ForceNotBoolean,
  InvalidRequest,
  MissingParameters,
  UnknownUser,
  UnknownUserId,
  UserExists,
  UsernameInUse,
} from '../errors';
import { operation } from '../kasm/operation';
import { cut64, parseId } from '../kasm/wire';
import {
  CreateUserBody,
  DeleteUserBody,
  GetUserBody,
  GetUsersBody,
  UpdateUserBody,
  UpdateUserNameBody,
  UpdateUserPasswordBody,
} from './body';
import { assertPasswordRules, hashPassword } from './passwords';
import { createUsersRepository } from './repository';
import { UserResponse, UsersResponse } from './schemas';
import { serializeUser, serializeUsers } from './serialize';

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1000;

/** Usernames are stored trimmed and lowercased. */
const normalizeUsername = (username: string) => username.trim().toLowerCase();

/** A string that names something: absent, null and blank strings do not. */
const named = (value: string | null | undefined): string | undefined =>
  typeof value === 'string' && value.trim() !== '' ? value : undefined;

/** `undefined` for absent or null ("leave unchanged"), the value otherwise. */
const given = <T>(value: T | null | undefined): T | undefined => (value === null ? undefined : value);

type NameFields = { first_name?: string | null; last_name?: string | null };
type ProfileFields = NameFields & {
  organization?: string | null;
  phone?: string | null;
  notes?: string | null;
  locked?: boolean | null;
  disabled?: boolean | null;
};

/** The changes a request's present, non-null name fields ask for (cut to 64 characters). */
function nameChanges(fields: NameFields): UserUpdate {
  const changes: UserUpdate = {};
  const firstName = given(fields.first_name);
  const lastName = given(fields.last_name);
  if (firstName !== undefined) changes.first_name = cut64(firstName);
  if (lastName !== undefined) changes.last_name = cut64(lastName);
  return changes;
}

function profileChanges(fields: ProfileFields): UserUpdate {
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

const usersRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const users = createUsersRepository(app.database.db);
  const db = app.database.db;
  const hash = (password: string) => hashPassword(password, app.config.argon2);

  /** The id an update names, as given (`Invalid Request` without a target or `user_id`). */
  function targetId(target: { user_id?: string | null } | null | undefined): string {
    const raw = named(target?.user_id);
    if (raw === undefined) throw new InvalidRequest();
    return raw;
  }

  /** The user of an update (`Unknown User` for a malformed or unknown id). */
  async function findTarget(raw: string): Promise<UserRow> {
    const id = parseId(raw);
    const row = id === undefined ? undefined : await users.findById(id);
    if (!row) throw new UnknownUser();
    return row;
  }

  /** Sets a new password: rules first, then the argon2id hash; a new password unlocks the user. */
  async function passwordChanges(password: string): Promise<UserUpdate> {
    assertPasswordRules(password);
    return { password_hash: await hash(password), locked: false };
  }

  async function applyUpdate(id: string, changes: UserUpdate) {
    const result = await users.update(id, changes);
    if (result.status === 'unknown') throw new UnknownUser();
    if (result.status === 'username-taken') throw new UsernameInUse();
    return { user: await serializeUser(db, result.row) };
  }

  const userResponse = (description: string) => annotate(UserResponse, { description });

  {
    const op = operation(
      { permission: 'Users View', writes: false },
      'users',
      'List users',
      'Users ordered by creation (oldest first, then by id), with `total`, the number of all users. Without `page` every user ' +
        'is returned (clients look users up on their side); with `page` (1-based) one page of `page_size` users (1..1000, default 100). ' +
        'A page past the end is empty.',
    );
    app.post(
      '/get_users',
      {
        config: op.config,
        schema: {
          ...op.schema,
          body: GetUsersBody,
          response: { 200: annotate(UsersResponse, { description: 'Users and their total' }), ...op.errors },
        },
      },
      async (request) => {
        const page = given(request.body.page);
        const pageSize = given(request.body.page_size);
        if (pageSize !== undefined && (pageSize < 1 || pageSize > MAX_PAGE_SIZE)) throw new BadPaging();
        if (page !== undefined && page < 1) throw new BadPaging();
        const total = await users.count();
        let rows: UserRow[];
        if (page === undefined) rows = await users.list();
        else {
          const limit = pageSize ?? DEFAULT_PAGE_SIZE;
          const offset = (page - 1) * limit;
          // A page past the end (however large the number) needs no query.
          rows = offset >= total ? [] : await users.list({ offset, limit });
        }
        return { users: await serializeUsers(db, rows), total };
      },
    );
  }

  {
    const op = operation(
      { permission: 'Users View', writes: false },
      'users',
      'Get a user',
      'The user named by `target_user.user_id`, or else by `target_user.username` (matched trimmed and case-insensitively). ' +
        'No target: `Invalid Request`; a malformed or unknown id or an unknown name: `Unknown User`.',
    );
    app.post(
      '/get_user',
      {
        config: op.config,
        schema: {
          ...op.schema,
          body: GetUserBody,
          response: { 200: userResponse('The user'), ...op.errors },
        },
      },
      async (request) => {
        const target = request.body.target_user;
        const userId = named(target?.user_id);
        const username = named(target?.username);
        let row: UserRow | undefined;
        if (userId !== undefined) {
          const id = parseId(userId);
          row = id === undefined ? undefined : await users.findById(id);
        } else if (username !== undefined) {
          row = await users.findByUsername(normalizeUsername(username));
        } else {
          throw new InvalidRequest();
        }
        if (!row) throw new UnknownUser();
        return { user: await serializeUser(db, row) };
      },
    );
  }

  {
    const op = operation(
      { permission: 'Users Create', writes: true },
      'users',
      'Create a user',
      'Creates a local user who joins "All Users" (in the same transaction). `username` is required, trimmed and lowercased, and ' +
        'unique (`Error creating user (<username>): (User already exists)`). `first_name`, `last_name`, `organization` and `phone` ' +
        'are cut to 64 characters. The password is stored as an argon2id hash (none when absent or empty); the password rules apply ' +
        'only when `ENFORCE_PASSWORD_RULES_ON_CREATE` is on. `locked: true` is kept.',
    );
    app.post(
      '/create_user',
      {
        config: op.config,
        schema: {
          ...op.schema,
          body: CreateUserBody,
          response: { 200: userResponse('The created user'), ...op.errors },
        },
      },
      async (request) => {
        const target = request.body.target_user;
        const rawName = named(target?.username);
        if (!target || rawName === undefined) throw new MissingParameters();
        const username = normalizeUsername(rawName);
        // Like Kasm, an empty password is no password.
        const password = target.password || undefined;
        if (password !== undefined && app.config.enforcePasswordRulesOnCreate) assertPasswordRules(password);
        const result = await users.create({
          username,
          password_hash: password === undefined ? null : await hash(password),
          first_name: cut64(target.first_name) ?? null,
          last_name: cut64(target.last_name) ?? null,
          organization: cut64(target.organization) ?? null,
          phone: cut64(target.phone) ?? null,
          notes: target.notes ?? null,
          locked: target.locked ?? false,
          disabled: target.disabled ?? false,
        });
        if (result.status === 'username-taken') throw new UserExists(username);
        return { user: await serializeUser(db, result.row) };
      },
    );
  }

  {
    const op = operation(
      { permission: 'Users Modify', writes: true },
      'users',
      'Update a user',
      'Changes the present, non-null fields of the user `target_user.user_id`; absent or null fields are left unchanged. ' +
        '`username` is trimmed, lowercased and unique (`Username already in use`); names, organization and phone are cut to 64 ' +
        'characters. A `password` must follow the password rules; setting one unlocks the user (even with `locked: true` in the ' +
        'same request).',
    );
    app.post(
      '/update_user',
      {
        config: op.config,
        schema: {
          ...op.schema,
          body: UpdateUserBody,
          response: { 200: userResponse('The updated user'), ...op.errors },
        },
      },
      async (request) => {
        const target = request.body.target_user ?? {};
        const row = await findTarget(targetId(target));
        const changes = profileChanges(target);
        const username = given(target.username);
        if (username !== undefined) {
          changes.username = normalizeUsername(username);
          if (!changes.username) throw new MissingParameters();
        }
        const password = given(target.password);
        if (password !== undefined) Object.assign(changes, await passwordChanges(password));
        return applyUpdate(row.id, changes);
      },
    );
  }

  {
    const op = operation(
      { permission: 'Users Delete', writes: true },
      'users',
      'Delete a user',
      'Deletes the user `target_user.user_id` and their memberships. `force` must be a boolean when given (default false); ' +
        'it exists for Kasm compatibility, where it allows deleting a user with running sessions: sessions do not exist here, so ' +
        'it has no further effect. A malformed or unknown id: `Unknown user (<user_id>)`.',
    );
    app.post(
      '/delete_user',
      {
        config: op.config,
        schema: {
          ...op.schema,
          body: DeleteUserBody,
          response: { 200: Type.Object({}, { description: 'The user is deleted' }), ...op.errors },
        },
      },
      async (request) => {
        const raw = named(request.body.target_user?.user_id);
        if (raw === undefined) throw new MissingParameters();
        const force = request.body.force;
        if (force !== undefined && force !== null && typeof force !== 'boolean') throw new ForceNotBoolean();
        const id = parseId(raw);
        if (id === undefined || !(await users.delete(id))) throw new UnknownUserId(raw);
        return {};
      },
    );
  }

  {
    const op = operation(
      { permission: 'Users Modify', writes: true },
      'users',
      'Set a user\u2019s password',
      'Sets the password of the user `target_user.user_id` (required, with `target_user.password`, else ' +
        '`Invalid Request: Missing required parameters`). The password must follow the password rules; setting it unlocks the user. ' +
        'An extension the real client calls; not a Kasm endpoint.',
    );
    app.post(
      '/update_user_password',
      {
        config: op.config,
        schema: {
          ...op.schema,
          body: UpdateUserPasswordBody,
          response: { 200: userResponse('The updated user'), ...op.errors },
        },
      },
      async (request) => {
        const target = request.body.target_user ?? {};
        const raw = targetId(target);
        const password = given(target.password);
        if (password === undefined) throw new MissingParameters();
        const row = await findTarget(raw);
        return applyUpdate(row.id, await passwordChanges(password));
      },
    );
  }

  {
    const op = operation(
      { permission: 'Users Modify', writes: true },
      'users',
      'Set a user\u2019s name',
      'Changes `first_name` and/or `last_name` (cut to 64 characters) of the user `target_user.user_id`; absent or null names ' +
        'are left unchanged, other fields are ignored. An extension the real client calls; not a Kasm endpoint.',
    );
    app.post(
      '/update_user_name',
      {
        config: op.config,
        schema: {
          ...op.schema,
          body: UpdateUserNameBody,
          response: { 200: userResponse('The updated user'), ...op.errors },
        },
      },
      async (request) => {
        const target = request.body.target_user ?? {};
        const row = await findTarget(targetId(target));
        return applyUpdate(row.id, nameChanges(target));
      },
    );
  }
};

export default usersRoutes;
