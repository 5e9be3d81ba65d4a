import { faker } from '@faker-js/faker';
import { progressBar as defaultProgressBar, type FakeGenerator } from './progress';
import { createFakeRepository, type FakePosts } from './repository';

/** Posts per staged INSERT: three array parameters whatever the size; ~1 MB of text. */
const BATCH = 5000;
export const MAX_POST_LENGTH = 280;
/** Distinct faker sentences posts are built from (faker makes ~80k paragraphs a second, too slow for 10⁶ posts). */
const POOL_SIZE = 10_000;

/** `text` cut at the last word boundary that keeps it within `max` characters. */
export function cutAtWord(text: string, max: number): string {
  if (text.length <= max) return text;
  const space = text.lastIndexOf(' ', max);
  return (space > 0 ? text.slice(0, space) : text.slice(0, max)).trimEnd();
}

/** A post of 1 to 5 random sentences from the pool, at most 280 characters. */
function postText(pool: string[]): string {
  const sentences = faker.number.int({ min: 1, max: 5 });
  let text = pool[faker.number.int({ min: 0, max: pool.length - 1 })];
  for (let i = 1; i < sentences; i++) {
    const next = `${text} ${pool[faker.number.int({ min: 0, max: pool.length - 1 })]}`;
    if (next.length > MAX_POST_LENGTH) break;
    text = next;
  }
  return cutAtWord(text, MAX_POST_LENGTH);
}

/**
 * Adds `count` posts, each by a random existing user, with faker text and a random timestamp
 * between the start of the current year (UTC) and now, in one transaction (see `insertPostsInBulk`).
 * Fails when there are no users.
 */
export const fakePosts: FakeGenerator = async (db, count, { progressBar = defaultProgressBar } = {}) => {
  const repository = createFakeRepository(db);
  const authors = await repository.userIds();
  if (!authors.length)
    throw new Error('there are no users to write the posts: add some first with `fake users <count>`');

  const pool = Array.from({ length: Math.min(POOL_SIZE, count * 5) }, () => faker.lorem.sentence());
  const now = Date.now();
  const yearStart = Date.UTC(new Date(now).getUTCFullYear(), 0, 1);

  const bar = progressBar('posts', count);
  function* batches(): Generator<FakePosts> {
    for (let done = 0; done < count; done += BATCH) {
      const size = Math.min(BATCH, count - done);
      const userIds = new Array<number>(size);
      const texts = new Array<string>(size);
      const timestamps = new Array<string>(size);
      for (let i = 0; i < size; i++) {
        userIds[i] = authors[faker.number.int({ min: 0, max: authors.length - 1 })];
        texts[i] = postText(pool);
        timestamps[i] = new Date(faker.number.int({ min: yearStart, max: now })).toISOString();
      }
      yield { userIds, texts, timestamps };
      bar.advance(size);
    }
  }
  let added: number;
  try {
    added = await repository.insertPostsInBulk(batches());
  } finally {
    bar.stop();
  }

  await repository.analyze(['posts']);
  return added;
};
