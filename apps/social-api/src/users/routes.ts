import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { SQLSTATE, sqlState } from '@platform/db';
import {
  nativeJson,
  RequestValidationError,
  type AjvError,
  type ValidationLocation,
} from '@platform/http-kit';
import type { FieldError } from '@platform/schema';
import type { UserUpdate } from '../db/schema';
import { BadRequest, Conflict, describeMarshmallow, NotFound, throttledResponse } from '../errors';
import { bodyErrors, errors, NoContent, parseId, routeOptions } from '../wire/http';
import { collection, Paginated, parseUsernameCursor } from '../wire/pagination';
import { createUsersRepository, uniqueViolation } from './repository';
import { NewUser, User, UserChanges, UserIdParams, UserKeyParams } from './schemas';
import { serializeUser } from './serialize';

export const UserPage = Paginated(User, 'UserPage');
/** Every user by id: offset pages only. */
const allUsers = collection(UserPage, serializeUser);
/** Follow lists, by username: `after` is a username. */
const followLists = collection(UserPage, serializeUser, parseUsernameCursor);

const DIFFERENT = { username: 'Use a different username.', email: 'Use a different email.' } as const;
const differentError = (field: 'username' | 'email') =>
  new RequestValidationError([{ field, message: DIFFERENT[field] }]);

/**
 * The body's own schema failures (routes with `attachValidation`), and the fields that passed them.
 * marshmallow runs every field's validators and then the `@validates` hooks of the fields that
 * passed, so "Use a different username." comes back beside another field's error, all at once.
 */
function bodyCheck(request: FastifyRequest): {
  schemaErrors: FieldError[];
  valid: (field: string) => string | undefined;
} {
  const failed = request.validationError as
    (Error & { validation?: AjvError[]; validationContext?: ValidationLocation }) | undefined;
  if (failed && !Array.isArray(failed.validation)) throw failed;
  const schemaErrors = failed?.validation
    ? describeMarshmallow(failed.validation, failed.validationContext ?? 'body')
    : [];
  const body = request.body;
  const fields =
    body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
  const invalid = new Set(schemaErrors.map((e) => e.field));
  return {
    schemaErrors,
    valid: (field) => {
      const value = fields[field];
      return !invalid.has('_schema') && !invalid.has(field) && typeof value === 'string' ? value : undefined;
    },
  };
}

const FOLLOW_LIST_NOTE =
  'Ordered by username; `after` is a username (items strictly after it, `offset` then counts those at or before it).';

const usersRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const users = createUsersRepository(app.database.db);
  const { open, token } = routeOptions('users', app.requireToken);

  /** Both unique rules checked up front (all messages at once, after `earlier` ones); the indexes settle races. */
  async function assertAvailable(
    fields: { username?: string; email?: string },
    exceptId?: number,
    earlier: FieldError[] = [],
  ) {
    const problems = [...earlier];
    for (const field of ['username', 'email'] as const) {
      const value = fields[field];
      if (value !== undefined && (await users.taken(field, value, exceptId)))
        problems.push({ field, message: DIFFERENT[field] });
    }
    if (problems.length) throw new RequestValidationError(problems);
  }

  /** A write that lost a race on a unique rule says which, like the check before it would have. */
  const translateUnique = (error: unknown): never => {
    const field = uniqueViolation(error);
    throw field ? differentError(field) : error;
  };

  const existingUser = async (idText: string) => {
    const user = await users.findById(parseId(idText));
    if (!user) throw new NotFound();
    return user;
  };

  app.post(
    '/users',
    {
      // The handler answers schema failures too, with the unique checks beside them (see `bodyCheck`).
      attachValidation: true,
      ...open({
        summary: 'Register a new user',
        description:
          'Open registration. Usernames: 3..64 characters starting with a letter; unique usernames and emails (emails whatever their case). ' +
          'Chosen here: in production mode (or when set) REGISTRATIONS_PER_ADDRESS (20) attempts per client address an hour, a fixed ' +
          'window; over it, 429 with `Retry-After` and `errors.json.username`. Off in development unless set (a client test suite registers its own users).',
        body: NewUser,
        response: { 201: User, ...bodyErrors(429), ...throttledResponse('username') },
      }),
      // The limit is the route's gate, not part of registering: counted for every request that got this
      // far, valid or not (schema failures reach the handler), before any password is hashed.
      preHandler: (request, reply) => app.authLimits.registration.allow(request.ip, reply),
    },
    async (request, reply) => {
      const { schemaErrors, valid } = bodyCheck(request);
      await assertAvailable({ username: valid('username'), email: valid('email') }, undefined, schemaErrors);
      const { username, email, password, about_me } = request.body;
      const now = app.clock();
      const created = await users
        .create({
          username,
          email,
          about_me: about_me ?? null,
          password_hash: await app.passwords.hash(password),
          first_seen: now,
          last_seen: now,
        })
        .catch(translateUnique);
      return reply.status(201).send(serializeUser(created));
    },
  );

  app.get(
    '/users',
    token({
      summary: 'Retrieve all users',
      description: 'Ordered by id. `limit`/`offset` only: `after` is a 400 on this collection.',
      ...allUsers.schema(401),
    }),
    async (request, reply) => allUsers.answer(request.query, users.all(), reply),
  );

  app.get(
    '/users/:id',
    token({
      summary: 'Retrieve a user by id or by username',
      description:
        'Digits are an id; anything else is a username (usernames start with a letter, so the two never collide).',
      params: UserKeyParams,
      response: { 200: User, ...errors(401, 404) },
    }),
    async (request, reply) => {
      const { id: key } = request.params;
      const user = /^[0-9]+$/.test(key)
        ? await users.findById(parseId(key))
        : await users.findByUsername(key);
      if (!user) throw new NotFound();
      // Your own page shows you seen now (the stored last_seen follows within about a second).
      return nativeJson(reply, serializeUser(user.id === request.user.id ? request.user : user));
    },
  );

  app.get(
    '/me',
    token({
      summary: 'Retrieve the authenticated user',
      response: { 200: User, ...errors(401) },
    }),
    async (request, reply) => nativeJson(reply, serializeUser(request.user)),
  );

  app.put(
    '/me',
    {
      attachValidation: true,
      ...token({
        summary: 'Edit user information',
        description:
          'Partial: only the fields sent change (keeping your own username or email is fine). `password` needs `old_password`: ' +
          'without it a plain 400; a wrong one is a validation error on `old_password` ("Password is incorrect"). Users without a ' +
          'password (OAuth2, fake) set one through the reset flow. A password change ends every other session of the user; ' +
          'the token pair that made it keeps working. A wrong `old_password` counts as a failed login of the account (the login limits of POST /api/tokens: 429 with `Retry-After` and `errors.json.old_password`).',
        body: UserChanges,
        response: { 200: User, ...bodyErrors(401, 429), ...throttledResponse('old_password') },
      }),
    },
    async (request, reply) => {
      const me = request.user;
      const { schemaErrors, valid } = bodyCheck(request);
      const oldPassword = valid('old_password');
      let wrongOldPassword: FieldError[] = [];
      if (oldPassword !== undefined) {
        // A wrong old password is a failed login of this account from this address (same limits).
        const attempt = await app.authLimits.beginLogin(request, reply, me.username, 'old_password');
        if ((await app.passwords.check(await users.passwordHash(me.id), oldPassword, attempt.priority)).ok) {
          await attempt.succeeded();
        } else {
          await attempt.failed();
          wrongOldPassword = [{ field: 'old_password', message: 'Password is incorrect' }];
        }
      }
      await assertAvailable({ username: valid('username'), email: valid('email') }, me.id, [
        ...schemaErrors,
        ...wrongOldPassword,
      ]);
      const { username, email, about_me, password, old_password } = request.body;
      if (password !== undefined && old_password === undefined) throw new BadRequest();
      const changes: UserUpdate = {};
      if (username !== undefined) changes.username = username;
      if (email !== undefined) changes.email = email;
      if (about_me !== undefined) changes.about_me = about_me;
      if (password !== undefined) changes.password_hash = await app.passwords.hash(password);
      const updated = await users.update(me.id, changes).catch(translateUnique);
      if (!updated) throw new NotFound();
      if (changes.password_hash !== undefined) await app.tokens.revokeOthers(me.id, request.tokenId);
      return serializeUser(updated);
    },
  );

  for (const direction of ['following', 'followers'] as const) {
    const summaries =
      direction === 'following'
        ? ['Retrieve whom I follow', 'Retrieve whom a user follows']
        : ['Retrieve my followers', "Retrieve a user's followers"];
    app.get(
      `/me/${direction}`,
      token({
        summary: summaries[0],
        description: FOLLOW_LIST_NOTE,
        ...followLists.schema(401),
      }),
      async (request, reply) => followLists.answer(request.query, users[direction](request.user.id), reply),
    );
    app.get(
      `/users/:id/${direction}`,
      token({
        summary: summaries[1],
        description: FOLLOW_LIST_NOTE,
        params: UserIdParams,
        ...followLists.schema(401, 404),
      }),
      async (request, reply) => {
        const user = await existingUser(request.params.id);
        return followLists.answer(request.query, users[direction](user.id), reply);
      },
    );
  }

  /**
   * `/me/following/<id>`: whether you follow a user, follow, unfollow. Each looks the user up (404
   * when there is none), then answers 204 when `act` holds for you and that user, else `otherwise`.
   */
  const following = [
    {
      method: 'GET',
      summary: 'Check whether a user is followed',
      description: '204 when you follow the user; 404 when you do not, or there is no such user.',
      statuses: [401, 404],
      act: (me: number, user: number) => users.isFollowing(me, user),
      otherwise: NotFound,
    },
    {
      method: 'POST',
      summary: 'Follow a user',
      description: '409 when already followed. Following yourself is allowed (as in the Flask backend).',
      statuses: [401, 404, 409],
      act: (me: number, user: number) =>
        users.follow(me, user).catch((error: unknown) => {
          // The user was deleted between the lookup and the insert.
          if (sqlState(error) === SQLSTATE.foreignKeyViolation) throw new NotFound();
          throw error;
        }),
      otherwise: Conflict,
    },
    {
      method: 'DELETE',
      summary: 'Unfollow a user',
      description: '409 when not followed.',
      statuses: [401, 404, 409],
      act: (me: number, user: number) => users.unfollow(me, user),
      otherwise: Conflict,
    },
  ] as const;
  for (const { method, summary, description, statuses, act, otherwise } of following)
    app.route({
      method,
      url: '/me/following/:id',
      ...token({
        summary,
        description,
        params: UserIdParams,
        response: { 204: NoContent, ...errors(...statuses) },
      }),
      handler: async (request, reply) => {
        const user = await existingUser(request.params.id);
        if (!(await act(request.user.id, user.id))) throw new otherwise();
        return reply.status(204).send();
      },
    });
};

export default usersRoutes;
