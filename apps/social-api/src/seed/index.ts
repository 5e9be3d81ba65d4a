import type { Kysely } from 'kysely';
import type { SocialDatabase } from '../db/schema';
import { fakePosts } from './posts';
import type { FakeGenerator } from './progress';
import { fakeUsers } from './users';

export const FAKE_USAGE = `  fake users <N>                add N users (no password), each following 0-5 of the new ones
  fake posts <N>                add N posts by random existing users, dated this year`;

export const FAKE_KINDS = ['users', 'posts'] as const;
export type FakeKind = (typeof FAKE_KINDS)[number];

const generators: Record<FakeKind, FakeGenerator> = { users: fakeUsers, posts: fakePosts };

export const isFakeKind = (value: string | undefined): value is FakeKind =>
  FAKE_KINDS.includes(value as FakeKind);

/** A count argument: a whole number of at least 1, written in digits. */
export function parseCount(kind: FakeKind, value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1) {
    throw new Error(
      `fake ${kind}: the count must be a whole number of at least 1, not ${JSON.stringify(value)}`,
    );
  }
  return n;
}

/** Runs `fake users|posts <count>` and prints the Flask backend's line: `N users added.` / `N posts added.` */
export async function fakeCommand(
  db: Kysely<SocialDatabase>,
  kind: FakeKind,
  count: number,
  out: (line: string) => void,
): Promise<number> {
  const added = await generators[kind](db, count);
  out(`${added} ${kind} added.`);
  return 0;
}
