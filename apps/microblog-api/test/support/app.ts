import type { Database } from '@platform/db';
import * as testing from '@platform/testing';
import { buildApp } from '../../src/app';
import { loadConfig, type Config } from '../../src/config';
import type { MicroblogDatabase } from '../../src/db/schema';

export type TestApp = testing.TestApp<Config, MicroblogDatabase>;

/** Every write limit out of the way (a test of the limits sets its own). */
export const NO_WRITE_LIMITS = {
  WRITE_LIMIT_PER_CLIENT: '100000',
  WRITE_LIMIT_PER_ADDRESS: '100000',
  WRITE_LIMIT_WITHOUT_CLIENT_ID: '100000',
} as const;

/** The real app over a fresh schema (see `buildTestApp` of http-kit), its write limits out of the way. */
export function buildTestApp(env: Record<string, string> = {}): Promise<TestApp> {
  return testing.buildTestApp({
    service: 'microblog',
    loadConfig,
    buildApp,
    env: { ...NO_WRITE_LIMITS, ...env },
  });
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
