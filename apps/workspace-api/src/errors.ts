import { Type, type Static } from '@sinclair/typebox';
import { createError, type ErrorDialect } from '@platform/http-kit';

/**
 * Every error workspace-api answers, with Kasm's exact wording (clients match on it). Kasm uses
 * 400 for unknown entities, 401 for permissions, 403 for bad credentials.
 */
const E = <A extends unknown[] = []>(code: string, message: string, status = 400) =>
  createError<A>(`WORKSPACE_${code}`, message, status);

// authentication and permissions
export const InvalidRequest = E('INVALID_REQUEST', 'Invalid Request');
export const AccessDenied = E('ACCESS_DENIED', 'Access Denied', 403);
export const AccessExpired = E('ACCESS_EXPIRED', 'Access has expired', 401);
export const Unauthorized = E('UNAUTHORIZED', 'Unauthorized', 401);

// requests
export const MissingParameters = E('MISSING_PARAMETERS', 'Invalid Request: Missing required parameters');
export const InvalidRequestDetail = E<[string]>('INVALID_REQUEST_DETAIL', 'Invalid Request: %s');
export const BadPaging = E('BAD_PAGING', 'Invalid Request: page and page_size must be positive');

// users
export const UnknownUser = E('UNKNOWN_USER', 'Unknown User');
export const UnknownUserId = E<[string]>('UNKNOWN_USER_ID', 'Unknown user (%s)');
export const UserExists = E<[string]>('USER_EXISTS', 'Error creating user (%s): (User already exists)');
export const UsernameInUse = E('USERNAME_IN_USE', 'Username already in use');
export const ForceNotBoolean = E('FORCE_NOT_BOOLEAN', "Invalid Request. 'force' option must be boolean");
export const PasswordRule = E<[string]>('PASSWORD_RULE', '%s');

// groups and membership
export const InvalidUserId = E<[string]>('INVALID_USER_ID', 'Invalid User ID (%s)');
export const InvalidGroupId = E<[string]>('INVALID_GROUP_ID', 'Invalid Group ID (%s)');
export const GroupExists = E<[string]>('GROUP_EXISTS', 'Group (%s) already exists');
export const InvalidPriority = E<[string]>('INVALID_PRIORITY', 'Invalid priority value (%s)');
export const SystemGroup = E('SYSTEM_GROUP', 'Cannot delete a system group');
export const AlreadyMember = E<[string, string]>(
  'ALREADY_MEMBER',
  'User (%s) is already a member of group (%s)',
);
export const NotMember = E<[string, string]>('NOT_MEMBER', 'User (%s) is not a member of group (%s)');

// images
export const InvalidImageId = E<[string]>('INVALID_IMAGE_ID', 'Invalid Image ID (%s)');
export const ImageExists = E<[string]>('IMAGE_EXISTS', 'Image (%s) already exists');
export const InvalidWorkspace = E<[string]>('INVALID_WORKSPACE', 'Invalid workspace: %s');
export const MissingGroupOrImage = E('MISSING_GROUP_OR_IMAGE', 'Invalid request, missing group or image id');
export const GroupOrImageMissing = E('GROUP_OR_IMAGE_MISSING', 'Group or image does not exist');

// acting for a user (a top-level `user_id`, Kasm's impersonation)
export const ImpersonationRefused = E<[string]>(
  'IMPERSONATION_REFUSED',
  'API Key (%s) is not authorized to impersonate a user.',
  401,
);
export const InvalidActingUser = E<[string]>('INVALID_ACTING_USER', 'Invalid user_id (%s)');

// sessions
export const SessionsUnavailable = E(
  'SESSIONS_UNAVAILABLE',
  'Sessions are not available: no container engine is configured',
);
export const NoActingUser = E<[string]>(
  'NO_ACTING_USER',
  'DevAPI Key (%s) made invalid call to impersonate a user without providing a user_id.',
);
export const NoUserSent = E('NO_USER_SENT', 'No User sent with request');
export const NoDefaultImage = E('NO_DEFAULT_IMAGE', 'No Default Image Found');
export const ImageDisabled = E<[string]>('IMAGE_DISABLED', 'Image (%s) is disabled');
export const ImageNotAllowed = E<[string, string]>(
  'IMAGE_NOT_ALLOWED',
  'Image (%s) is not available to user (%s)',
);
export const SharingUnsupported = E(
  'SHARING_UNSUPPORTED',
  'Session sharing is not supported (enable_sharing)',
);
export const SessionLimit = E<[string]>('SESSION_LIMIT', 'Kasm limit exceeded for user: (%s)');
export const InvalidKasmId = E<[string]>('INVALID_KASM_ID', 'Invalid kasm_id (%s)');
export const KeepaliveError = E<[string]>('KEEPALIVE_ERROR', 'Keepalive Error: %s');
export const DestroyError = E<[string]>('DESTROY_ERROR', 'Destroy Error: %s', 503);
export const KasmNotRunning = E('KASM_NOT_RUNNING', 'Kasm is not running or is not responding');
export const PrivilegedExec = E(
  'PRIVILEGED_EXEC',
  'Privileged commands are not supported (exec_config.privileged)',
);
export const ExecFailed = E<[string]>('EXEC_FAILED', 'Kasm exec failed: %s');
export const ExecUnavailable = E<[string]>('EXEC_UNAVAILABLE', 'Kasm exec failed: %s', 503);
export const UnsupportedOperation = E<[string]>(
  'UNSUPPORTED_OPERATION',
  'Unsupported request: %s is not available on this server',
);
export const UserHasSessions = E<[string]>(
  'USER_HAS_SESSIONS',
  "Users contains (%s) kasms and 'force' option not set to True",
);

// reaching a session: the connect page's token exchange and the reverse proxy (our own words: Kasm's
// connect flow is not part of its developer API)
export const ConnectRefused = E(
  'CONNECT_REFUSED',
  'This connect link is invalid, already used or expired: get a new kasm_url from get_kasm_status',
  403,
);
export const NoSessionCookie = E<[string]>(
  'NO_SESSION_COOKIE',
  'No session cookie for session (%s) in this browser: open the session through its kasm_url',
  401,
);
export const BadSessionCookie = E<[string]>(
  'BAD_SESSION_COOKIE',
  'The session cookie for session (%s) is invalid or expired: open the session through a new kasm_url',
  401,
);
export const NotSessionOwner = E<[string]>(
  'NOT_SESSION_OWNER',
  'This session cookie does not open session (%s): it belongs to another session or user',
  403,
);
export const SessionOver = E<[string, string]>('SESSION_OVER', 'Session (%s) is %s', 403);
export const SessionStarting = E<[string, string]>(
  'SESSION_STARTING',
  'Session (%s) is not running yet (%s): try again in a moment',
  503,
);
export const WorkspaceUnreachable = E<[string]>(
  'WORKSPACE_UNREACHABLE',
  'The workspace does not answer: %s',
  502,
);
export const WorkspaceTimeout = E('WORKSPACE_TIMEOUT', 'The workspace did not answer in time', 504);

/** Kasm Workspaces' error body: one sentence, whatever went wrong. */
export const KasmError = Type.Object(
  { error_message: Type.String({ examples: ['Access Denied'] }) },
  { $id: 'KasmError', description: 'Kasm-compatible error body' },
);
export type KasmError = Static<typeof KasmError>;

/** The service's error wire format: Kasm's `{"error_message"}`, validation failures joined in one sentence. */
export const kasmDialect: ErrorDialect = {
  schemaRef: 'KasmError',
  schemas: [KasmError],
  contentType: 'application/json; charset=utf-8',
  body: (p): KasmError => ({ error_message: p.detail }),
};
