import { UNSUPPORTED_OPERATIONS } from '../../src/auth/permissions';

/** The contract's operations (`POST /api/public/<operation>`), by their OpenAPI tag. */
export const OPERATIONS_BY_TAG = {
  credentials: ['validate_credentials'],
  users: [
    'get_users',
    'get_user',
    'create_user',
    'update_user',
    'delete_user',
    'update_user_password',
    'update_user_name',
  ],
  groups: [
    'get_groups',
    'create_group',
    'update_group',
    'delete_group',
    'add_user_group',
    'remove_user_group',
    'change_user_group',
    'get_users_group',
  ],
  images: [
    'install_workspace',
    'get_images',
    'delete_image',
    'add_images_group',
    'remove_images_group',
    'get_images_group',
    'get_user_images',
  ],
  sessions: [
    'request_kasm',
    'get_kasm_status',
    'get_kasms',
    'keepalive',
    'destroy_kasm',
    'exec_command_kasm',
    ...UNSUPPORTED_OPERATIONS,
  ],
};
