import { faker } from '@faker-js/faker';
import type { Kysely } from 'kysely';
import type { MicroblogDatabase, NewPost, NewReply } from '../db/schema';
import { createPostsRepository } from '../posts/repository';
import { QUEST_TOPICS, REACTION_KINDS } from '../posts/schemas';

const BATCH = 500;

const sentence = (max: number) => faker.lorem.sentence({ min: 3, max: 18 }).slice(0, max);

/** Demo data: posts spread over the last month, some replies and reactions. Batched inserts. */
export async function seedDemoData(
  db: Kysely<MicroblogDatabase>,
  postCount: number,
): Promise<{ posts: number; replies: number }> {
  const posts = createPostsRepository(db);
  let replies = 0;
  for (let done = 0; done < postCount; done += BATCH) {
    const batch: NewPost[] = Array.from({ length: Math.min(BATCH, postCount - done) }, () => ({
      content: sentence(280),
      quest_topic: faker.helpers.arrayElement(QUEST_TOPICS),
      student_name: faker.person.firstName().slice(0, 50),
      created_at: faker.date.recent({ days: 30 }),
      ...Object.fromEntries(
        REACTION_KINDS.map((k) => [`${k}_count`, faker.number.int({ max: k === 'like' ? 25 : 6 })]),
      ),
    }));
    // Oldest first, so ids grow with time like real traffic.
    batch.sort((a, b) => (a.created_at as Date).getTime() - (b.created_at as Date).getTime());
    const ids = await posts.insertPosts(batch);
    const newReplies: NewReply[] = ids.flatMap((post_id) =>
      Array.from({ length: faker.number.int({ max: 3 }) }, () => ({
        post_id,
        content: sentence(280),
        student_name:
          faker.helpers.maybe(() => faker.person.firstName().slice(0, 50), { probability: 0.7 }) ?? null,
      })),
    );
    await posts.insertReplies(newReplies);
    replies += newReplies.length;
  }
  return { posts: postCount, replies };
}
