import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { childProofLog } from './documents/proof';

const TSX_LOADER = pathToFileURL(
  resolve(__dirname, '..', '..', '..', 'node_modules', 'tsx', 'dist', 'loader.mjs'),
);
const CHILD_PROOF = pathToFileURL(resolve(__dirname, 'documents', 'child-preload.mjs'));

/**
 * The variables that make a service's own process started by a test prove its responses against the
 * service's document as the test's own are (NODE_OPTIONS loads tsx and `documents/child-preload.mjs`,
 * which reports to this process's proof).
 */
export function childProofEnv(): { NODE_OPTIONS: string; PROVEN_RESPONSES_CHILD_LOG: string } {
  return {
    NODE_OPTIONS: `--import ${TSX_LOADER.href} --import ${CHILD_PROOF.href}`,
    PROVEN_RESPONSES_CHILD_LOG: childProofLog(),
  };
}

/**
 * The environment of a service's own process (its command line or `main.ts`) started by a test on a
 * test database: this process's environment, the database's URL and schema, no NODE_OPTIONS of
 * Jest's but those of `childProofEnv`, and the variables of `env`.
 */
export function childProcessEnv(
  database: { url: string; schema: string },
  env: Record<string, string> = {},
): NodeJS.ProcessEnv {
  return {
    ...process.env,
    ...childProofEnv(),
    ...env,
    DB_SCHEMA: database.schema,
    DATABASE_URL: database.url,
  };
}
