import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

/**
 * The Redis of the system tests: TEST_REDIS_URL, else the machine's (127.0.0.1:6379, database 0).
 * Shared by every test run on the machine, so a test keeps its keys under a prefix of its own.
 */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/0';

/** `<name>-<random>:`, a key prefix no other test run uses. */
export function testRedisKeyPrefix(name: string): string {
  return `${name}-${randomBytes(5).toString('hex')}:`;
}

/** The test Redis with every key under `keyPrefix` (ioredis reads `keyPrefix` from the URL). */
export function testRedisUrl(keyPrefix: string): string {
  return `${TEST_REDIS_URL}?keyPrefix=${keyPrefix}`;
}

/** Runs `use` on a connection of its own to the test Redis, disconnected afterwards. */
export async function withTestRedis<T>(use: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis(TEST_REDIS_URL);
  try {
    return await use(redis);
  } finally {
    redis.disconnect();
  }
}

/** The test Redis's keys matching `pattern` (SCAN, so a shared Redis is never blocked). */
export function testRedisKeys(pattern: string): Promise<string[]> {
  return withTestRedis(async (redis) => {
    const keys: string[] = [];
    for await (const batch of redis.scanStream({ match: pattern, count: 500 }))
      keys.push(...(batch as string[]));
    return keys;
  });
}

/** Deletes the test Redis's keys matching `pattern` (a run's `<prefix>*`, in its afterAll). */
export async function deleteTestRedisKeys(pattern: string): Promise<void> {
  const keys = await testRedisKeys(pattern);
  if (keys.length) await withTestRedis((redis) => redis.del(...keys));
}
