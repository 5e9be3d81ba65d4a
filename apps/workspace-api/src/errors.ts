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
