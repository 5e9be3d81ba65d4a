import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { faker } from '@faker-js/faker';
import type { Kysely } from 'kysely';
import type { Config } from '../config';
import type { NewUser, WorkspaceDatabase } from '../db/schema';
import { readRegistryDocument } from '../images/cli';
import { createImagesRepository } from '../images/repository';
import { createImagesService } from '../images/service';
import { ALL_USERS_GROUP_ID, cut64 } from '../wire/kasm';
import { seedRepository } from './repository';
import { hashPassword } from '../users/passwords';

export const SEED_USAGE = `  seed [--users=N] [--groups=N]  add demo users (default 50) and groups (default 5) with memberships,
                                and install the sample registry's workspaces`;

/** The registry the demo workspaces come from (from src/ and dist/ alike). */
export const SAMPLE_REGISTRY = resolve(__dirname, '..', '..', 'registry', 'sample-list.json');

const MAX_COUNT = 100_000;

/** The counts a `seed` command line asks for; throws on a bad one (checked before any change). */
export function seedCounts(options: { users?: string; groups?: string }): { users: number; groups: number } {
  return { users: count('users', options.users, 50), groups: count('groups', options.groups, 5) };
}

function count(option: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n > MAX_COUNT)
    throw new Error(`--${option} must be an integer from 0 to ${MAX_COUNT}`);
  return n;
}

const TEAMS = [
  'CSA',
  'CSP',
  'CSSE',
  'Robotics',
  'Data Science',
  'Cybersecurity',
  'Game Design',
  'Web Development',
  'Staff',
];

/**
 * Demo data: users (all sharing one random demo password, hashed once with argon2id), groups with
 * allow-lists of the sample registry's workspaces, memberships (everyone in All Users, most in one
 * or two more groups). Batched inserts; existing usernames, group names and images are skipped, so
 * it can run again.
 */
export async function seedCommand(
  db: Kysely<WorkspaceDatabase>,
  config: Config,
  options: { users?: string; groups?: string },
  out: (line: string) => void,
): Promise<number> {
  const { users: userCount, groups: groupCount } = seedCounts(options);
  const seed = seedRepository(db);
  const images = createImagesRepository(db);

  const registry = await readRegistryDocument(SAMPLE_REGISTRY);
  const outcomes = await createImagesService(db).importWorkspaces(registry.workspaces);
  const tally = (status: string) => outcomes.filter((o) => o.status === status).length;
  const imageIds = (await images.list()).map((i) => i.id);

  const groupIds = await seed.insertGroups(
    Array.from({ length: groupCount }, () => ({
      name: `${faker.helpers.arrayElement(TEAMS)} ${faker.location.city()}`,
      description: faker.company.catchPhrase(),
      priority: faker.number.int({ min: 1, max: 4094 }),
    })),
  );
  const allowed = await images.addManyToGroups(
    groupIds.flatMap((group_id) =>
      faker.helpers
        .arrayElements(imageIds, { min: Math.min(2, imageIds.length), max: Math.min(4, imageIds.length) })
        .map((image_id) => ({ group_id, image_id })),
    ),
  );

  const password = `Demo-${randomBytes(6).toString('base64url')}-1`;
  const passwordHash = userCount ? await hashPassword(password, config.argon2) : null;
  const users: NewUser[] = Array.from({ length: userCount }, () => {
    const firstName = faker.person.firstName();
    const lastName = faker.person.lastName();
    const created = faker.date.past({ years: 1 });
    return {
      username:
        `${faker.internet.username({ firstName, lastName })}${faker.number.int({ max: 999 })}`.toLowerCase(),
      password_hash: passwordHash,
      first_name: cut64(firstName),
      last_name: cut64(lastName),
      organization: cut64(faker.company.name()),
      phone: cut64(faker.phone.number()),
      notes: faker.helpers.maybe(() => faker.lorem.sentence(), { probability: 0.2 }) ?? null,
      disabled: faker.datatype.boolean({ probability: 0.05 }),
      created,
      last_session:
        faker.helpers.maybe(() => faker.date.between({ from: created, to: new Date() }), {
          probability: 0.6,
        }) ?? null,
    };
  });
  const userIds = await seed.insertUsers(users);
  const joinable = await seed.joinableGroups();
  const memberships = await seed.insertMemberships(
    userIds.flatMap((user_id) => [
      { user_id, group_id: ALL_USERS_GROUP_ID },
      ...faker.helpers
        .arrayElements(joinable, { min: 0, max: Math.min(2, joinable.length) })
        .map((group_id) => ({ user_id, group_id })),
    ]),
  );

  out(
    `workspaces: ${tally('installed')} installed, ${tally('skipped')} already installed, ${tally('rejected')} rejected (${registry.name})`,
  );
  out(`groups: ${groupIds.length} added, ${allowed} workspace permissions`);
  out(`users: ${userIds.length} added, ${memberships} group memberships`);
  if (userIds.length) out(`every seeded user's password: ${password}`);
  return 0;
}
