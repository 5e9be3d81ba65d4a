import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { annotate, Nullable, StringEnum, withMessage } from '@platform/schema';
import { SESSION_STATES } from '../db/schema';
import { IdInput, KasmDate, KasmId } from '../wire/kasm';
import { OperationBody } from '../wire/operation';

/*
 * Request bodies declare types only: every field is optional so each operation answers a missing
 * field with Kasm's own message; `null` counts as absent; unknown fields (Kasm's `connection_info`,
 * `client_language`…) are ignored.
 */

const optional = <T extends TSchema>(schema: T, description: string) =>
  Type.Optional(Nullable(annotate(schema, { description })));

/**
 * Environment variables: text values (the names, as shells take them, are checked by the service:
 * OpenAPI 3.0 cannot say it).
 */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const MAX_ENV_VARIABLES = 256;
export const MAX_ENV_VALUE_LENGTH = 32_768;
const Environment = (description: string) =>
  optional(
    withMessage(
      Type.Object(
        {},
        {
          additionalProperties: Type.String({ maxLength: MAX_ENV_VALUE_LENGTH }),
          maxProperties: MAX_ENV_VARIABLES,
        },
      ),
      `must be an object of at most ${MAX_ENV_VARIABLES} variables, each a string of at most ${MAX_ENV_VALUE_LENGTH} characters`,
    ),
    `${description}; names like \`${ENV_NAME.source}\``,
  );

const UserId = optional(
  IdInput,
  'The user the request acts for (Kasm\u2019s impersonation): the key needs `User` and `Users Auth Session`; ' +
    'an unknown or malformed id answers `Invalid user_id (<id>)`',
);
const KasmIdInput = optional(IdInput, 'The session (32 hex characters; dashed UUIDs accepted)');

export const RequestKasmBody = OperationBody({
  user_id: UserId,
  image_id: optional(IdInput, 'The workspace to start (required here: no default images exist)'),
  environment: Environment(
    'Variables set in the workspace\u2019s container (they win over the image\u2019s)',
  ),
  enable_sharing: optional(
    Type.Boolean(),
    'Sharing is not supported: `true` answers 400; false or absent is fine',
  ),
});
export type RequestKasmBody = Static<typeof RequestKasmBody>;

export const GetKasmStatusBody = OperationBody({
  kasm_id: KasmIdInput,
  user_id: UserId,
  skip_agent_check: optional(Type.Boolean(), 'Accepted and ignored (there are no agents to check)'),
});
export type GetKasmStatusBody = Static<typeof GetKasmStatusBody>;

export const GetKasmsBody = OperationBody();

/** keepalive, destroy_kasm: a session, and optionally the user it belongs to. */
export const SessionBody = OperationBody({ kasm_id: KasmIdInput, user_id: UserId });
export type SessionBody = Static<typeof SessionBody>;

export const ExecCommandKasmBody = OperationBody({
  kasm_id: KasmIdInput,
  user_id: UserId,
  exec_config: optional(
    Type.Object(
      {
        cmd: optional(Type.String(), 'Required: a shell command line, run with `sh -c`'),
        user: optional(Type.String(), 'The user to run it as (default: the image\u2019s)'),
        environment: Environment('Variables of the command'),
        privileged: optional(Type.Boolean(), 'Not supported: `true` answers 400'),
      },
      { description: 'What to run; other fields (`workdir`…) are ignored' },
    ),
    '`{cmd, user?, environment?}`; required',
  ),
});
export type ExecCommandKasmBody = Static<typeof ExecCommandKasmBody>;

export const UnsupportedBody = OperationBody({}, 'Any body: the operation is not supported');

/* Answers. */

const State = StringEnum(SESSION_STATES, {
  description:
    '`requested` → `starting` → `running` → `stopping` → `stopped`, or `failed` (with the engine\u2019s reason)',
});

/** Where a session runs, in Kasm's `server` shape. */
const Server = Type.Object(
  {
    server_id: Nullable(
      annotate(KasmId, {
        description: 'Always null: sessions run on container engines, not registered agents',
      }),
    ),
    hostname: Type.String({ description: 'The host the engine runs the container on' }),
    port: Type.Integer({
      minimum: 1,
      maximum: 65535,
      description: 'The workspace\u2019s port in its container',
    }),
  },
  { description: 'Where the session runs' },
);
const ListedServer = Type.Object(
  {
    ...Server.properties,
    provider: Type.String({ examples: ['docker'], description: 'The container engine' }),
    zone_name: Type.String({ examples: ['default'] }),
  },
  { description: 'Where the session runs' },
);

/** A session in Kasm's `kasm` shape (get_kasm_status, get_kasms, exec_command_kasm). */
export const Kasm = Type.Object(
  {
    kasm_id: KasmId,
    user_id: KasmId,
    image_id: Nullable(annotate(KasmId, { description: 'null once the image was deleted' })),
    image: Type.Object({
      image_id: Nullable(KasmId),
      name: Type.String({ description: 'The image reference the container was made from' }),
      friendly_name: Nullable(Type.String()),
      image_src: Nullable(Type.String()),
    }),
    operational_status: State,
    container_id: Nullable(
      Type.String({ description: 'The engine\u2019s id of the container, once started' }),
    ),
    port: Type.Integer({
      minimum: 1,
      maximum: 65535,
      description: 'The workspace\u2019s port in its container',
    }),
    start_date: annotate(KasmDate, { description: 'When the session was requested' }),
    keepalive_date: annotate(KasmDate, { description: 'The last keepalive (the request at first)' }),
    expiration_date: annotate(KasmDate, { description: 'When the session is destroyed unless kept alive' }),
    user: Type.Object({ username: Type.String() }),
    server: ListedServer,
  },
  { $id: 'Kasm', description: 'A session (Kasm\u2019s `kasm`)' },
);
export type Kasm = Static<typeof Kasm>;

/** A session in a user object (Kasm's `kasms[]` of get_user/get_users). */
export const UserKasm = Type.Object(
  {
    kasm_id: KasmId,
    start_date: KasmDate,
    keepalive_date: KasmDate,
    expiration_date: KasmDate,
    server: Server,
  },
  { $id: 'UserKasm', description: 'A live session of the user' },
);
export type UserKasm = Static<typeof UserKasm>;

export const RequestKasmResponse = Type.Object(
  {
    kasm_id: KasmId,
    status: State,
    user_id: KasmId,
    username: Type.String(),
    session_token: Type.String({ description: 'The one-time connect token (also the end of `kasm_url`)' }),
    kasm_url: Type.String({
      description:
        '`/#/connect/kasm/<kasm_id>/<user_id>/<session_token>`, opened on this service\u2019s origin',
      examples: ['/#/connect/kasm/9f4e2a0c1b3d4e5f8a7b6c5d4e3f2a1b/50faa5439c574b518cd868dac9256e4b/Jq3x...'],
    }),
  },
  { description: 'The session, requested: its container starts in the background' },
);

const CurrentTime = annotate(KasmDate, { description: 'The server\u2019s time now (UTC)' });

export const GetKasmStatusResponse = Type.Object(
  {
    operational_status: State,
    operational_message: Type.String({
      description: 'What is happening (the engine\u2019s reason when failed)',
    }),
    operational_progress: Type.Integer({ minimum: 0, maximum: 100 }),
    current_time: CurrentTime,
    kasm: Type.Optional(Type.Ref(Kasm, { description: 'The session, once running' })),
    kasm_url: Type.Optional(
      Type.String({
        description:
          'Once running: a new connect URL with a new one-time token (the previous one stops working)',
      }),
    ),
  },
  { description: 'The session\u2019s state' },
);

export const GetKasmsResponse = Type.Object(
  { kasms: Type.Array(Type.Ref(Kasm)), current_time: CurrentTime },
  { description: 'Every live session, oldest first' },
);

export const KeepaliveResponse = Type.Object(
  { usage_reached: Type.Boolean({ description: 'Always false: there are no usage limits' }) },
  { description: 'The session\u2019s expiration is extended' },
);

export const ExecCommandKasmResponse = Type.Object(
  { kasm: Type.Ref(Kasm), current_time: CurrentTime },
  { description: 'The command was started (not waited for)' },
);

export const UnsupportedResponse = Type.Object(
  {},
  { description: 'Never answered: the operation always answers 400 (not supported)' },
);
