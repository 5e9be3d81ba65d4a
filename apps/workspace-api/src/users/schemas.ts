import { Type, type Static } from '@sinclair/typebox';
import { annotate, Nullable } from '@platform/schema';
import { KasmDate, KasmId } from '../wire/kasm';
import { UserKasm } from '../sessions/schemas';

export const GroupRef = Type.Object({ name: Type.String(), group_id: KasmId });

/** Kasm's user object; passwords and hashes never appear. */
export const User = Type.Object(
  {
    user_id: KasmId,
    username: Type.String(),
    first_name: Nullable(Type.String()),
    last_name: Nullable(Type.String()),
    locked: Type.Boolean(),
    disabled: Type.Boolean(),
    organization: Nullable(Type.String()),
    phone: Nullable(Type.String()),
    notes: Nullable(Type.String()),
    realm: Type.String({ examples: ['local'] }),
    last_session: Nullable(annotate(KasmDate, { description: 'null when the user never had a session' })),
    created: KasmDate,
    groups: Type.Array(GroupRef),
  },
  { $id: 'User', description: 'A user (Kasm shape)' },
);
export type User = Static<typeof User>;

export const UserResponse = Type.Object({ user: Type.Ref(User) });
export const UsersResponse = Type.Object({
  users: Type.Array(Type.Ref(User)),
  total: Type.Integer({ minimum: 0 }),
});

/** The user as get_user and get_users show it (Kasm's longer shape): with their live sessions. */
export const UserWithKasms = Type.Object(
  {
    ...User.properties,
    kasms: Type.Array(Type.Ref(UserKasm), {
      description: 'The user\u2019s live sessions, oldest first; empty unless the key has `Sessions View`',
    }),
  },
  { $id: 'UserWithKasms', description: 'A user (Kasm shape) with their sessions' },
);
export type UserWithKasms = Static<typeof UserWithKasms>;
export const UserWithKasmsResponse = Type.Object({ user: Type.Ref(UserWithKasms) });
export const UsersWithKasmsResponse = Type.Object({
  users: Type.Array(Type.Ref(UserWithKasms)),
  total: Type.Integer({ minimum: 0 }),
});
