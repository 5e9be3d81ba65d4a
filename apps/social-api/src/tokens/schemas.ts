import { Type, type Static } from '@sinclair/typebox';
import { Nullable } from '@platform/schema';

export const TokenPair = Type.Object(
  {
    access_token: Type.String({
      description: 'HS256 JWT; send it as `Authorization: Bearer <access_token>`',
    }),
    refresh_token: Nullable(
      Type.String({
        description:
          'Only with REFRESH_TOKEN_IN_BODY; otherwise null and the token travels in the HttpOnly `refresh_token` cookie',
      }),
    ),
  },
  { $id: 'Token', description: 'An access token and (maybe) its refresh token' },
);
export type TokenPair = Static<typeof TokenPair>;

export const RefreshBody = Type.Object(
  {
    access_token: Type.String({ description: 'The access token of the pair (it may have expired)' }),
    refresh_token: Type.Optional(
      Type.String({ description: 'The refresh token; absent: the `refresh_token` cookie is used' }),
    ),
  },
  { additionalProperties: false },
);

export const ResetRequestBody = Type.Object(
  { email: Type.String({ format: 'email', maxLength: 120 }) },
  { additionalProperties: false },
);

export const ResetBody = Type.Object(
  {
    token: Type.String({ description: 'The token from the reset link' }),
    new_password: Type.String({ minLength: 3 }),
  },
  { additionalProperties: false },
);

export const OAuth2Params = Type.Object({ provider: Type.String() });

export const OAuth2Body = Type.Object(
  {
    code: Type.String({ description: 'The authorization code the provider gave the browser' }),
    state: Type.String({
      description: 'The state the provider gave back; must match the one this service issued',
    }),
  },
  { additionalProperties: false },
);
