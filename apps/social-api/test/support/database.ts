import { openDatabase, type Database, type DatabaseConfig } from '@platform/db';
import { testDatabase } from '@platform/db/testing';
import type { SocialDatabase } from '../../src/db/schema';

/**
 * A fresh schema of the test database, open but not migrated (each test migrates it as far as it
 * needs), for the length of `use`, which gets it and its configuration: closed and dropped after,
 * whatever `use` did.
 */
export async function withFreshDatabase<T>(
  use: (database: Database<SocialDatabase>, config: DatabaseConfig) => Promise<T>,
): Promise<T> {
  const fresh = testDatabase('social');
  const database = await openDatabase<SocialDatabase>(fresh.config);
  try {
    return await use(database, fresh.config);
  } finally {
    await database.close();
    await fresh.cleanup();
  }
}
