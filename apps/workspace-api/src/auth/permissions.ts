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
] as const;
export type Permission = (typeof PERMISSIONS)[number];

export const isPermission = (value: string): value is Permission =>
  (PERMISSIONS as readonly string[]).includes(value);

/** What an operation needs: a permission (or any valid key), and whether it writes (read-only keys may not). */
export interface OperationAccess {
  permission: Permission | 'any';
  writes: boolean;
}

/** The access rule of an operation that only reads. */
export const reads = (permission: Permission | 'any'): OperationAccess => ({ permission, writes: false });
/** The access rule of an operation that writes (refused to read-only keys). */
export const writes = (permission: Permission): OperationAccess => ({ permission, writes: true });

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
};

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set on every Kasm operation route; the auth hook enforces it. */
    access?: OperationAccess;
  }
}
