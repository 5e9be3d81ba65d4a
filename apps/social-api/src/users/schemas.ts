import { Type, type Static } from '@sinclair/typebox';
import { IsoTimestamp, Nullable, VALIDATION_MESSAGE } from '@platform/schema';

/** A user as every endpoint returns it (also nested as a post's `author`); never a password or hash. */
export const User = Type.Object(
  {
    id: Type.Integer({ minimum: 1, examples: [1] }),
    url: Type.String({ description: '`/api/users/<id>`', examples: ['/api/users/1'] }),
    username: Type.String({ examples: ['susan'] }),
    email: Type.String({ examples: ['susan@example.com'] }),
    has_password: Type.Boolean({ description: 'false for users made by `fake users` or by an OAuth2 login' }),
    avatar_url: Type.String({
      description:
        'Gravatar identicon of the lower-cased email; it already has a query, so clients append `&s=<size>`',
      examples: ['https://www.gravatar.com/avatar/d4c74594d841139328695756648b6bd6?d=identicon'],
    }),
    about_me: Nullable(Type.String({ maxLength: 140 })),
    first_seen: IsoTimestamp(),
    last_seen: IsoTimestamp({ description: 'Updated by every token-authenticated request' }),
    posts_url: Type.String({ description: '`/api/users/<id>/posts`', examples: ['/api/users/1/posts'] }),
  },
  { $id: 'User', description: 'A user' },
);
export type User = Static<typeof User>;

const Username = Type.String({
  minLength: 3,
  maxLength: 64,
  // A separate subschema so its message does not replace the length message.
  allOf: [{ pattern: '^\\p{L}', [VALIDATION_MESSAGE]: 'Username must start with a letter' }],
  description: '3..64 characters, the first a letter; unique',
});
const Email = Type.String({
  format: 'email',
  maxLength: 120,
  description: 'A valid address, at most 120 characters; unique (whatever the case)',
});
const Password = Type.String({
  minLength: 3,
  description: 'At least 3 characters; stored as an argon2id hash',
});
const AboutMe = Nullable(Type.String({ maxLength: 140 }));

export const NewUser = Type.Object(
  { username: Username, email: Email, password: Password, about_me: Type.Optional(AboutMe) },
  { additionalProperties: false, description: 'Registration' },
);
export type NewUser = Static<typeof NewUser>;

export const UserChanges = Type.Object(
  {
    username: Type.Optional(Username),
    email: Type.Optional(Email),
    about_me: Type.Optional(AboutMe),
    password: Type.Optional(Password),
    old_password: Type.Optional(
      Type.String({ minLength: 3, description: 'Required with `password`: the current password' }),
    ),
  },
  { additionalProperties: false, description: 'Any subset of the fields; absent fields stay unchanged' },
);
export type UserChanges = Static<typeof UserChanges>;

/** `/users/<id>` or `/users/<username>`: digits are an id, anything else a username. */
export const UserKeyParams = Type.Object({ id: Type.String({ description: 'A user id, or a username' }) });
/** `/users/<id>/...`, `/me/following/<id>`: digits only (anything else is a 404, as Flask's `<int:id>`). */
export const UserIdParams = Type.Object({ id: Type.String({ description: 'A user id' }) });
