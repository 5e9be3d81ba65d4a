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

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set on every Kasm operation route; the auth hook enforces it. */
    access?: OperationAccess;
  }
}
