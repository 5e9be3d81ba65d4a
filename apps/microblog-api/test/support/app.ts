import type { FastifyInstance } from 'fastify';
import { openDatabase, type Database } from '@platform/db';
import { testDatabase } from '@platform/db/testing';
import { buildApp } from '../../src/app';
import { loadConfig, type Config } from '../../src/config';
import type { MicroblogDatabase } from '../../src/db/schema';

export interface TestApp {
  app: FastifyInstance;
  config: Config;
  database: Database<MicroblogDatabase>;
  /** SQL statements run since the last `queries.length = 0` (only when `countQueries`). */
  queries: string[];
  close(): Promise<void>;
}

/**
 * The real app, built by the production factory with production server options, over a fresh
 * database: a new schema of the test PostgreSQL (DATABASE_URL, or the local server Jest's global
 * setup provides).
 */
export async function buildTestApp(env: Record<string, string> = {}): Promise<TestApp> {
  const fresh = testDatabase('microblog');
  const config = loadConfig({
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    WRITE_RATE_LIMIT: '100000',
    ...env,
  });
  config.database = { ...fresh.config };
  const queries: string[] = [];
  const database = await openDatabase<MicroblogDatabase>(config.database, {
    onQuery: (event) => {
      if (event.level === 'query') queries.push(event.query.sql);
    },
  });
  const app = await buildApp(config, { database });
  await app.ready();
  return {
    app,
    config,
    database,
    queries,
    async close() {
      await app.close();
      await database.close();
      await fresh.cleanup();
    },
  };
}

/** What writes can change (posts, replies, all reaction counters), to show a rejected request stored nothing. */
export async function storedTotals(database: Database<MicroblogDatabase>) {
  const { db } = database;
  const totals = await db
    .selectFrom('posts')
    .select((eb) => [
      eb.fn.countAll<string>().as('posts'),
      eb.fn
        .coalesce(
          eb.fn.sum<string>(
            eb(
              eb(
                eb(eb('like_count', '+', eb.ref('love_count')), '+', eb.ref('celebrate_count')),
                '+',
                eb.ref('insightful_count'),
              ),
              '+',
              eb.ref('support_count'),
            ),
          ),
          eb.lit(0),
        )
        .as('reactions'),
    ])
    .executeTakeFirstOrThrow();
  const replies = await db
    .selectFrom('replies')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  return { posts: Number(totals.posts), replies: Number(replies.n), reactions: Number(totals.reactions) };
}
