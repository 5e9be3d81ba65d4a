import { costOfRequests, withStatementMeter } from '@platform/db/testing';
import { openForTheseTests } from '@platform/testing';
import { sql } from 'kysely';
import { createPostsRepository } from '../src/posts/repository';
import { QUEST_TOPICS } from '../src/posts/schemas';
import { buildTestApp } from './support/app';

/**
 * The default page (GET /api/microblog: 100 posts and their replies) is a read: over 200 requests it
 * sends at most 2 statements per request and writes no row.
 *
 * How it is counted: see `statementMeter` (@platform/db/testing): statements at the driver, rows
 * written from PostgreSQL's pg_stat_user_tables.
 */
describe('the default page: statements and writes', () => {
  const REQUESTS = 200;
  const metered = openForTheseTests(() => buildTestApp().then(withStatementMeter), 60_000);

  beforeAll(async () => {
    const { db } = metered().database;
    const posts = createPostsRepository(db);
    const ids = await posts.insertPosts(
      Array.from({ length: 150 }, (_, i) => ({
        content: `post ${i}`,
        quest_topic: QUEST_TOPICS[i % 6],
        student_name: 'Seed',
      })),
    );
    await posts.insertReplies(ids.map((post_id) => ({ post_id, content: 'a reply', student_name: null })));
    await sql`analyze`.execute(db);
  }, 60_000);

  test(`${REQUESTS} default pages: at most 2 statements each, no row written`, async () => {
    const { app, meter } = metered();
    const { writtenBefore, perRequest, written } = await costOfRequests(meter, REQUESTS, async () => {
      const response = await app.inject('/api/microblog');
      expect(response.statusCode).toBe(200);
      expect(response.json()).toHaveLength(100);
    });
    // The seed's 150 posts, 150 replies and their counts are seen: the reading counts writes.
    expect(writtenBefore).toBeGreaterThanOrEqual(450);

    expect({ perRequest, written }).toEqual({ perRequest: expect.any(Number), written: 0 });
    expect(perRequest).toBeLessThanOrEqual(2);
  }, 120_000);

  test('the page writes the bytes the schema serialiser writes (it is serialised natively)', async () => {
    const { app } = metered();
    // A post answered by a route that serialises through the response schema, then listed.
    const created = await app.inject({
      method: 'POST',
      url: '/api/microblog',
      payload: {
        content: 'quotes " and \\ , controls \u0001\t\n, \u2028, é, 😀, </script>',
        quest_topic: 'online_safety',
        student_name: 'Zoë "Z"',
      },
    });
    expect(created.statusCode).toBe(201);
    const listed = await app.inject('/api/microblog?limit=1');
    expect(listed.statusCode).toBe(200);
    expect(listed.headers['content-type']).toBe(created.headers['content-type']);
    expect(listed.body).toBe(`[${created.body}]`);
  });
});
