import { isAbsolute, join, resolve } from 'node:path';

/**
 * The settings of the local PostgreSQL server that runtime code reads without loading the server
 * itself: a service's config names its default port, the development path its data directory. The
 * manager (`@platform/db/local`, local-server.ts) is loaded only when no DATABASE_URL is given.
 */

export const DEFAULT_LOCAL_PG_PORT = 54329;
/** Environment variable naming the local server's port (stated in errors about a taken port). */
export const LOCAL_PG_PORT_VARIABLE = 'LOCAL_PG_PORT';

/** The repository root, seen from this file in libs/db/src or libs/db/dist. */
export const REPOSITORY_ROOT = resolve(__dirname, '..', '..', '..');

/**
 * The local server's data directory from a `DATA_DIR` setting: empty means `<root>/.data/postgres`,
 * a relative path is taken from the repository root (whatever directory a command runs in).
 */
export function localDataDir(setting: string | undefined, root = REPOSITORY_ROOT): string {
  if (!setting) return join(root, '.data', 'postgres');
  return isAbsolute(setting) ? setting : resolve(root, setting);
}
