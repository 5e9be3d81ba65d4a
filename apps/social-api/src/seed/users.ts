import { faker } from '@faker-js/faker';
import { progressBar as defaultProgressBar, type FakeGenerator } from './progress';
import { createFakeRepository, type FakeUser } from './repository';

/** Rows per INSERT (three parameters a row, far below the 65535 limit). */
const BATCH = 1000;
const MAX_FOLLOWS = 5;
/** Top-up rounds of one batch before giving up; each adds a longer number to the names, so a few suffice. */
const MAX_ROUNDS = 20;

/** What the API accepts as a username (POST /api/users): 3..64 characters, the first a letter. */
export const isValidUsername = (name: string) =>
  name.length >= 3 && name.length <= 64 && /^\p{L}/u.test(name);

/**
 * A faker username the API would accept. `suffix` (a number, when earlier candidates were taken)
 * goes at the end, within the 64 characters.
 */
function fakeUsername(firstName: string, lastName: string, suffix: string): string {
  for (;;) {
    // Letters, digits and faker's separators only: no apostrophes or spaces from names like O'Keefe.
    const base = faker.internet.username({ firstName, lastName }).replace(/[^\p{L}\p{N}._-]/gu, '');
    const name = base.slice(0, 64 - suffix.length) + suffix;
    if (isValidUsername(name)) return name;
    firstName = faker.person.firstName();
  }
}

function fakeEmail(firstName: string, lastName: string, suffix: string): string {
  for (;;) {
    const [local, domain] = faker.internet.email({ firstName, lastName }).split('@');
    const email = `${local}${suffix ? `.${suffix}` : ''}@${domain}`;
    if (email.length <= 120) return email;
    lastName = faker.person.lastName();
  }
}

function fakeAboutMe(): string {
  for (;;) {
    const sentence = faker.lorem.sentence();
    if (sentence.length <= 140) return sentence;
  }
}

/** One new user; in top-up round `round` (> 0) the names carry a random number of up to 2·round+1 digits. */
function fakeUser(round = 0): FakeUser {
  const firstName = faker.person.firstName();
  const lastName = faker.person.lastName();
  const suffix =
    round > 0 ? String(faker.number.int({ min: 1, max: 10 ** Math.min(2 * round + 1, 12) - 1 })) : '';
  return {
    username: fakeUsername(firstName, lastName, suffix),
    email: fakeEmail(firstName, lastName, suffix),
    about_me: fakeAboutMe(),
  };
}

/** `count` distinct indexes in 0..size-1, none equal to `self`. */
function othersThan(self: number, size: number, count: number): Set<number> {
  const picked = new Set<number>();
  const wanted = Math.min(count, size - 1);
  while (picked.size < wanted) {
    const i = faker.number.int({ min: 0, max: size - 1 });
    if (i !== self) picked.add(i);
  }
  return picked;
}

/**
 * Adds exactly `count` users: faker usernames and emails, a one-sentence `about_me`, no password.
 * Names already taken (in the table, or twice in one batch) are skipped by the database and that
 * batch is topped up with new candidates carrying a number, so collisions never stop the command.
 * Then each new user follows 0 to 5 others of the new users. Returns the number of users added.
 */
export const fakeUsers: FakeGenerator = async (db, count, { progressBar = defaultProgressBar } = {}) => {
  const repository = createFakeRepository(db);
  const ids: number[] = [];

  const usersBar = progressBar('users', count);
  try {
    while (ids.length < count) {
      const batchEnd = Math.min(ids.length + BATCH, count);
      for (let round = 0; ids.length < batchEnd; round++) {
        if (round === MAX_ROUNDS)
          throw new Error(
            `could not find ${batchEnd - ids.length} free usernames and emails after ${MAX_ROUNDS} tries`,
          );
        const added = await repository.insertUsersSkippingTaken(
          Array.from({ length: batchEnd - ids.length }, () => fakeUser(round)),
        );
        ids.push(...added);
        usersBar.advance(added.length);
      }
    }
  } finally {
    usersBar.stop();
  }

  const followsBar = progressBar('follows', ids.length);
  try {
    for (let start = 0; start < ids.length; start += BATCH) {
      const followers: number[] = [];
      const followed: number[] = [];
      const end = Math.min(start + BATCH, ids.length);
      for (let i = start; i < end; i++) {
        for (const j of othersThan(i, ids.length, faker.number.int({ min: 0, max: MAX_FOLLOWS }))) {
          followers.push(ids[i]);
          followed.push(ids[j]);
        }
      }
      await repository.insertFollows(followers, followed);
      followsBar.advance(end - start);
    }
  } finally {
    followsBar.stop();
  }

  await repository.analyze(['users', 'followers']);
  return ids.length;
};
