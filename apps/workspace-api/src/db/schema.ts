import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely';
import type { ServiceSecretsTable } from '@platform/db';

type Json = ColumnType<unknown, string | null, string | null>;

export interface ApiKeysTable {
  id: Generated<string>;
  api_key: string;
  secret_salt: string;
  secret_hash: string;
  name: string;
  enabled: Generated<boolean>;
  read_only: Generated<boolean>;
  expires: Date | null;
  permissions: string[];
  created: Generated<Date>;
}

export interface UsersTable {
  id: Generated<string>;
  username: string;
  password_hash: string | null;
  first_name: string | null;
  last_name: string | null;
  organization: string | null;
  phone: string | null;
  notes: string | null;
  locked: Generated<boolean>;
  disabled: Generated<boolean>;
  realm: Generated<string>;
  last_session: Date | null;
  created: Generated<Date>;
}

export interface GroupsTable {
  id: Generated<string>;
  name: string;
  description: string | null;
  priority: number;
  is_system: Generated<boolean>;
  created: Generated<Date>;
}

export interface UserGroupsTable {
  user_id: string;
  group_id: string;
  created: Generated<Date>;
}

export interface ImagesTable {
  id: Generated<string>;
  name: string;
  friendly_name: string;
  description: string;
  image_src: string;
  architecture: string[];
  compatibility: string[];
  uncompressed_size_mb: number;
  categories: Generated<string[]>;
  docker_registry: string | null;
  run_config: Json;
  exec_config: Json;
  notes: string | null;
  cores: number | null;
  memory: number | null;
  gpu_count: number | null;
  enabled: Generated<boolean>;
  created: Generated<Date>;
}

export interface GroupImagesTable {
  group_id: string;
  image_id: string;
  created: Generated<Date>;
}

/** A session's states: `requested → starting → running → stopping → stopped`, or `failed`. */
export const SESSION_STATES = ['requested', 'starting', 'running', 'stopping', 'stopped', 'failed'] as const;
export type SessionState = (typeof SESSION_STATES)[number];
/** The states of a session that is not over (it counts towards the user's maximum). */
export const LIVE_STATES = ['requested', 'starting', 'running', 'stopping'] as const satisfies SessionState[];

export interface SessionsTable {
  id: Generated<string>;
  user_id: string;
  image_id: string | null;
  image_name: string;
  state: Generated<SessionState>;
  provider: string;
  hostname: string;
  web_port: number;
  container_id: string | null;
  reason: string | null;
  progress: Generated<number>;
  message: string | null;
  environment: ColumnType<Record<string, string>, string | undefined, string>;
  created: Generated<Date>;
  started: Date | null;
  keepalive: Generated<Date>;
  expiration: Date;
  stopped: Date | null;
  connect_token_hash: string | null;
  connect_token_expires: Date | null;
}

export interface WorkspaceDatabase {
  api_keys: ApiKeysTable;
  users: UsersTable;
  groups: GroupsTable;
  user_groups: UserGroupsTable;
  images: ImagesTable;
  group_images: GroupImagesTable;
  sessions: SessionsTable;
  /** The secrets the migrations drew: the session cookie's signing key. */
  service_secrets: ServiceSecretsTable<'session_cookie'>;
}

export type ApiKeyRow = Selectable<ApiKeysTable>;
export type UserRow = Selectable<UsersTable>;
export type NewUser = Insertable<UsersTable>;
export type UserUpdate = Updateable<UsersTable>;
export type GroupRow = Selectable<GroupsTable>;
export type ImageRow = Selectable<ImagesTable>;
export type NewImage = Insertable<ImagesTable>;
export type SessionRow = Selectable<SessionsTable>;
export type NewSession = Insertable<SessionsTable>;
