import { ensureLocalServer, type LocalServer } from '../local-server';
import { localDataDir } from '../local-settings';

declare global {
  // Handed from the global setup to the global teardown (same process).
  var __localTestServer: LocalServer | undefined;
}

/**
 * Jest global setup of every project (jest.preset.cjs): without DATABASE_URL, the tests run on the
 * local PostgreSQL server (started, or joined when `npm start` or another run holds it), handed to
 * the test workers as DATABASE_URL; each test file then works in a fresh schema of its own.
 */
export default async function setup(): Promise<void> {
  if (process.env.DATABASE_URL) return;
  const port = process.env.LOCAL_PG_PORT ? Number(process.env.LOCAL_PG_PORT) : undefined;
  const server = await ensureLocalServer({ dataDir: localDataDir(process.env.DATA_DIR), port });
  globalThis.__localTestServer = server;
  process.env.DATABASE_URL = server.url;
}
