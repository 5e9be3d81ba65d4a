import { sql } from 'kysely';
import { createPostsRepository } from '../src/posts/repository';
import { QUEST_TOPICS } from '../src/posts/schemas';
import { buildTestApp, type TestApp } from './support/app';

/**
 * Listing costs a fixed number of statements whatever the page size, and every page — first or
 * deep, filtered or not — is read through an index that stops after `limit + 1` rows.
 */
describe('listing cost', () => {
  const POSTS = 3000;
  let t: TestApp;
  let ids: number[];

  beforeAll(async () => {
    t = await buildTestApp();
    const posts = createPostsRepository(t.database.db);
    ids = [];
    for (let i = 0; i < POSTS; i += 1000) {
      ids.push(
        ...(await posts.insertPosts(
          Array.from({ length: 1000 }, (_, j) => ({
            content: `post ${i + j}`,
            quest_topic: QUEST_TOPICS[(i + j) % 6],
            student_name: 'Seed',
          })),
        )),
      );
    }
    await posts.insertReplies(
      ids.flatMap((post_id) => [
        { post_id, content: 'a reply', student_name: null },
        { post_id, content: 'another', student_name: 'Bo' },
      ]),
    );
    await sql`analyze`.execute(t.database.db);
  }, 60_000);
  afterAll(() => t?.close());

  test.each([1, 20, 500])(
    'a page of %i posts with their replies costs the same number of statements',
    async (limit) => {
      t.queries.length = 0;
      const response = await t.app.inject(`/api/microblog?limit=${limit}`);
      expect(response.statusCode).toBe(200);
      const page = response.json() as { replies: unknown[] }[];
      expect(page).toHaveLength(limit);
      expect(page.every((p) => p.replies.length === 2)).toBe(true);
      expect(t.queries).toHaveLength(2); // the page, then the replies of all its posts
    },
  );

  type PlanNode = { 'Node Type': string; 'Index Name'?: string; 'Actual Rows'?: number; Plans?: PlanNode[] };
  const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];

  test.each([
    ['first page', {}],
    ['deep page', { before: 50 }],
    ['first page of a topic', { topic: 'online_safety' as const }],
    ['deep page of a topic', { topic: 'online_safety' as const, before: 300 }],
  ])('the %s is an index scan reading at most limit + 1 rows, with no sort', async (_name, filter) => {
    const posts = createPostsRepository(t.database.db);
    const [row] = await posts.pageQuery({ limit: 20, ...filter }).explain('json', sql`analyze`);
    const plan = nodes((row['QUERY PLAN'] as { Plan: PlanNode }[])[0].Plan);
    expect(plan.map((n) => n['Node Type'])).not.toContain('Sort');
    expect(plan.map((n) => n['Node Type'])).not.toContain('Seq Scan');
    const scan = plan.find((n) => n['Node Type'].startsWith('Index'));
    expect(scan?.['Index Name']).toMatch(/^posts_(pkey|topic_id_idx)$/);
    expect(scan?.['Actual Rows']).toBeLessThanOrEqual(21);
  });
});
