import { reads, UNSUPPORTED_OPERATIONS, writes } from '../auth/permissions';
import { UnsupportedOperation } from '../errors';
import { answerEmpty, EmptyResponse, operationsOf } from '../wire/operation';
import {
  ExecCommandKasmBody,
  ExecCommandKasmResponse,
  GetKasmsBody,
  GetKasmsResponse,
  GetKasmStatusBody,
  GetKasmStatusResponse,
  KeepaliveResponse,
  RequestKasmBody,
  RequestKasmResponse,
  SessionBody,
  UnsupportedBody,
  UnsupportedResponse,
} from './schemas';
import { callerOf, createSessionsService } from './service';

const UNAVAILABLE =
  'Without a container engine configured (`SESSIONS_ENGINE`), answers `Sessions are not available: no container engine is configured`.';
const ACTING =
  'A top-level `user_id` makes the request the user\u2019s (Kasm\u2019s impersonation): the key then needs `User` and ' +
  '`Users Auth Session` (else 401 `API Key (<name>) is not authorized to impersonate a user.`); an unknown or malformed ' +
  'id answers `Invalid user_id (<id>)`.';
const SESSION =
  '`kasm_id` is required (`Invalid Request: Missing required parameters`); a malformed or unknown one answers ' +
  '`Invalid kasm_id (<id>)`.';

/** The session operations, answered by the sessions service. */
const operations = operationsOf('sessions', (app) =>
  createSessionsService(app.database.db, app.sessions, app.config.sessions),
);

operations.add({
  name: 'request_kasm',
  access: writes('User', { actsForUser: true }),
  summary: 'Start a session',
  description:
    'Starts a session of the workspace `image_id` for the user `user_id`, answered at once (`status: requested`) while its ' +
    'container is pulled, created and started in the background (follow it with get_kasm_status). ' +
    `${ACTING} Anonymous users are not made: without \`user_id\`, \`DevAPI Key (<name>) made invalid call to impersonate a user ` +
    'without providing a user_id.`. Without `image_id`: `No Default Image Found` (there are no default images). A malformed ' +
    'or unknown image: `Invalid Image ID (<id>)`; a disabled one: `Image (<id>) is disabled`; one none of the user\u2019s ' +
    'groups may use: `Image (<image_id>) is not available to user (<user_id>)`. `environment` (variables named like ' +
    '`^[A-Za-z_][A-Za-z0-9_]*$`, text values) is set in the container over the image\u2019s `run_config.environment`. ' +
    '`enable_sharing: true` answers `Session sharing is not supported (enable_sharing)`. A user has at most ' +
    '`SESSIONS_MAX_PER_USER` live sessions (default 2, as Kasm), checked under a lock of the user so concurrent requests ' +
    'cannot exceed it: `Kasm limit exceeded for user: (<username>)`. The session expires `SESSIONS_KEEPALIVE_SECONDS` after ' +
    'its start unless kept alive; the user\u2019s `last_session` becomes now. `kasm_url` ' +
    '(`/#/connect/kasm/<kasm_id>/<user_id>/<session_token>`) opens the workspace from this service\u2019s origin; its token ' +
    `is single-use and expires after 10 minutes. ${UNAVAILABLE}`,
  body: RequestKasmBody,
  response: RequestKasmResponse,
  answer: (body, sessions, request) => sessions.request(body, callerOf(request)),
});

operations.add({
  name: 'get_kasm_status',
  access: reads('User', { actsForUser: true }),
  summary: 'Read a session\u2019s state',
  description:
    'The state of the session `kasm_id` of the user `user_id` (required: `No User sent with request`; another user\u2019s ' +
    'session answers like an unknown one): `operational_status`, and `operational_message`/`operational_progress` from the ' +
    'engine while it starts (its reason once failed). Once running it also answers the `kasm` object and a fresh ' +
    '`kasm_url` whose new one-time token replaces the previous one. ' +
    `${SESSION} ${ACTING} \`skip_agent_check\` is ignored. ${UNAVAILABLE}`,
  body: GetKasmStatusBody,
  response: GetKasmStatusResponse,
  answer: (body, sessions, request) => sessions.status(body, callerOf(request)),
});

operations.add({
  name: 'get_kasms',
  access: reads('Sessions View'),
  summary: 'List live sessions',
  description:
    'Every session that is not over (requested, starting, running or stopping), oldest first, each with `user: {username}` ' +
    `and \`server: {server_id (null), hostname, port, provider, zone_name}\`, and \`current_time\`. ${UNAVAILABLE}`,
  body: GetKasmsBody,
  response: GetKasmsResponse,
  answer: (_body, sessions) => sessions.list(),
});

operations.add({
  name: 'keepalive',
  access: reads('User', { actsForUser: true, orPermission: 'Sessions Modify' }),
  summary: 'Keep a session alive',
  description:
    'Extends the expiration of the session `kasm_id` to `SESSIONS_KEEPALIVE_SECONDS` (default 3600; Kasm\u2019s group ' +
    'setting `keepalive_expiration`) from now; an expiration already later is kept (never shortened). Its owner (the ' +
    '`user_id` the request acts for) may, and so may a key with `Sessions Modify` for any session. Read-only keys may, as in ' +
    `Kasm. A session that is over or stopping: \`Keepalive Error: the session (<id>) is <state>\`. ${SESSION} ${ACTING} ` +
    `\`usage_reached\` is always false (no usage limits). ${UNAVAILABLE}`,
  body: SessionBody,
  response: KeepaliveResponse,
  answer: (body, sessions, request) => sessions.keepalive(body, callerOf(request)),
});

operations.add({
  name: 'destroy_kasm',
  access: writes('User', { actsForUser: true, orPermission: 'Sessions Delete' }),
  summary: 'Destroy a session',
  description:
    'Stops the session `kasm_id`: `stopping`, its container stopped and removed (a start under way is cancelled), then ' +
    '`stopped`; answers once the container is gone. Its owner (the `user_id` the request acts for) may, and so may a key ' +
    'with `Sessions Delete` for any session. A session already over answers `{}` too. When the engine cannot remove the ' +
    'container: 503 `Destroy Error: <the engine\u2019s reason>` (the session stays `stopping`; destroying it again retries). ' +
    `${SESSION} ${ACTING} ${UNAVAILABLE}`,
  body: SessionBody,
  response: EmptyResponse('The session is destroyed'),
  answer: answerEmpty((body, sessions, request) => sessions.destroy(body, callerOf(request))),
});

operations.add({
  name: 'exec_command_kasm',
  access: writes('User', { actsForUser: true, orPermission: 'Sessions Modify' }),
  summary: 'Run a command in a session',
  description:
    'Starts `exec_config.cmd` (required, run by `sh -c`) in the running session `kasm_id`, as `exec_config.user` (default: ' +
    'the image\u2019s) with `exec_config.environment`, and answers once it has started (not when it ends), as Kasm does. ' +
    'Its owner (the `user_id` the request acts for) may, and so may a key with `Sessions Modify` for any session. No ' +
    '`exec_config` or `cmd`: `Invalid Request: Missing required parameters`; `privileged: true`: refused; a session that is ' +
    'not running: `Kasm is not running or is not responding`; the engine refusing: `Kasm exec failed: <reason>` (503 when ' +
    `the engine cannot be reached). ${SESSION} ${ACTING} ${UNAVAILABLE}`,
  body: ExecCommandKasmBody,
  response: ExecCommandKasmResponse,
  answer: (body, sessions, request) => sessions.exec(body, callerOf(request)),
});

for (const name of UNSUPPORTED_OPERATIONS)
  operations.add({
    name,
    access: reads('any'),
    summary: `${name} (not supported)`,
    description:
      `A Kasm operation this service does not provide (session sharing, screenshots and statistics, session permissions, ` +
      `recordings, login session tokens, casting, staging, licensing): any valid key gets 400 ` +
      `\`Unsupported request: ${name} is not available on this server\`.`,
    body: UnsupportedBody,
    response: UnsupportedResponse,
    answer: async () => {
      throw new UnsupportedOperation(name);
    },
  });

export default operations.plugin;
