/** Kasm's permission names, exactly as clients and admins write them. */
export const PERMISSIONS = [
  'Global Admin',
  'Users View',
  'Users Create',
  'Users Modify',
  'Users Delete',
  'Groups View',
  'Groups Create',
  'Groups Modify',
  'Groups Delete',
  'Images View',
  'Images Create',
  'Images Modify',
  'Images Delete',
  // Sessions (workspaces running as containers): `User` is a user's own base permission (start,
  // reach, keep alive, destroy one's own sessions), `Users Auth Session` lets a key act for a user
  // (the body's `user_id`), the `Sessions` ones reach other users' sessions.
  'User',
  'Users Auth Session',
  'Sessions View',
  'Sessions Modify',
  'Sessions Delete',
] as const;
export type Permission = (typeof PERMISSIONS)[number];

export const isPermission = (value: string): value is Permission =>
  (PERMISSIONS as readonly string[]).includes(value);

/** What an operation needs: a permission (or any valid key), and whether it writes (read-only keys may not). */
export interface OperationAccess {
  permission: Permission | 'any';
  writes: boolean;
  /**
   * A permission that also lets a key in: the one over other users' sessions (`Sessions Delete` for
   * destroy_kasm…), for keys that act for no user of their own. The operation checks which applies.
   */
  orPermission?: Permission;
  /**
   * The operation runs as the user a top-level `user_id` names (Kasm's impersonation): the key then
   * needs `User` and `Users Auth Session` too, and the auth hook sets `request.actingUser`.
   */
  actsForUser?: boolean;
}

/** The access rule of an operation that only reads. */
export const reads = (
  permission: Permission | 'any',
  more: Partial<OperationAccess> = {},
): OperationAccess => ({
  permission,
  writes: false,
  ...more,
});
/** The access rule of an operation that writes (refused to read-only keys). */
export const writes = (permission: Permission, more: Partial<OperationAccess> = {}): OperationAccess => ({
  permission,
  writes: true,
  ...more,
});

/** Whether a key holds a permission (`Global Admin` holds them all). */
export const keyHas = (key: { permissions: readonly string[] }, permission: Permission): boolean =>
  key.permissions.includes('Global Admin') || key.permissions.includes(permission);

/** The operations Kasm has in §4.3 that this service does not provide: each answers a clear 400. */
export const UNSUPPORTED_OPERATIONS = [
  'join_kasm',
  'get_kasm_screenshot',
  'get_kasm_frame_stats',
  'get_kasm_bottleneck_stats',
  'set_session_permissions',
  'set_all_session_permissions',
  'get_session_permissions',
  'delete_session_permissions',
  'delete_all_session_permissions',
  'get_session_recordings',
  'get_sessions_recordings',
  'get_session_tokens',
  'get_session_token',
  'create_session_token',
  'update_session_token',
  'delete_session_token',
  'delete_session_tokens',
  'get_cast_configs',
  'get_cast_config',
  'create_cast_config',
  'update_cast_config',
  'delete_cast_config',
  'get_staging_config',
  'create_staging_config',
  'update_staging_config',
  'delete_staging_config',
  'activate',
] as const;

/** The session operations a key may run for a user (`user_id`) or, with `orPermission`, on anyone's session. */
const forUser = { actsForUser: true } as const;

/**
 * The permission table of the contract (`../shared/contracts/workspace-api.md`, Operations): what each
 * `/api/public/<operation>` needs. The routes declare their own rule next to their code; a test
 * compares every registered route with this table, so none is missing, extra or differently guarded.
 */
export const OPERATION_ACCESS: Readonly<Record<string, OperationAccess>> = {
  validate_credentials: reads('any'),
  get_users: reads('Users View'),
  get_user: reads('Users View'),
  create_user: writes('Users Create'),
  update_user: writes('Users Modify'),
  delete_user: writes('Users Delete'),
  update_user_password: writes('Users Modify'),
  update_user_name: writes('Users Modify'),
  get_groups: reads('Groups View'),
  create_group: writes('Groups Create'),
  update_group: writes('Groups Modify'),
  delete_group: writes('Groups Delete'),
  add_user_group: writes('Groups Modify'),
  remove_user_group: writes('Groups Modify'),
  change_user_group: writes('Groups Modify'),
  get_users_group: reads('Groups View'),
  install_workspace: writes('Images Create'),
  get_images: reads('Images View'),
  delete_image: writes('Images Delete'),
  add_images_group: writes('Groups Modify'),
  remove_images_group: writes('Groups Modify'),
  get_images_group: reads('Groups View'),
  get_user_images: reads('Users View'),
  request_kasm: writes('User', forUser),
  get_kasm_status: reads('User', forUser),
  get_kasms: reads('Sessions View'),
  keepalive: reads('User', { ...forUser, orPermission: 'Sessions Modify' }),
  destroy_kasm: writes('User', { ...forUser, orPermission: 'Sessions Delete' }),
  exec_command_kasm: writes('User', { ...forUser, orPermission: 'Sessions Modify' }),
  ...Object.fromEntries(UNSUPPORTED_OPERATIONS.map((name) => [name, reads('any')])),
};

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set on every Kasm operation route; the auth hook enforces it. */
    access?: OperationAccess;
  }
}
