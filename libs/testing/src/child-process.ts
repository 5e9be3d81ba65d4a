/**
 * The environment of a service's own process (its command line or `main.ts`) started by a test on a
 * test database: this process's environment, the database's URL and schema, no NODE_OPTIONS of
 * Jest's, and the variables of `env`.
 */
export function childProcessEnv(
  database: { url: string; schema: string },
  env: Record<string, string> = {},
): NodeJS.ProcessEnv {
  return {
    ...process.env,
    NODE_OPTIONS: '',
    ...env,
    DB_SCHEMA: database.schema,
    DATABASE_URL: database.url,
  };
}
