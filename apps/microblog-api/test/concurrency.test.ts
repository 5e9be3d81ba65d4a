import { REACTION_KINDS, type ReactionKind } from '../src/posts/schemas';
import { startTestServer, type TestServer } from './support/server';

/** Every reaction counter at `count`, then those of `counts`. */
const reactionCounts = (count: number, counts: Partial<Record<ReactionKind, number>> = {}) => ({
  ...Object.fromEntries(REACTION_KINDS.map((kind) => [kind, count])),
  ...counts,
});

/** Races over real HTTP: counters never lose an increment, ids never collide. */
describe('concurrent writes', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server?.close());

  const postJson = (path: string, body: unknown) =>
    fetch(`${server.baseUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  async function createPost(content: string): Promise<number> {
    const response = await postJson('/api/microblog', {
      content,
      quest_topic: 'digital_ethics',
      student_name: 'Lin',
    });
    expect(response.status).toBe(201);
    return ((await response.json()) as { id: number }).id;
  }

  async function listed(id: number) {
    const posts = (await (await fetch(`${server.baseUrl}/api/microblog?limit=500`)).json()) as {
      id: number;
      reply_count: number;
      replies: unknown[];
      reactions: Record<string, number>;
    }[];
    const post = posts.find((p) => p.id === id);
    if (!post) throw new Error(`post ${id} not listed`);
    return post;
  }

  test('200 concurrent reactions on one post leave exactly 200 more', async () => {
    const id = await createPost('react to me');
    await postJson('/api/microblog/reaction', { post_id: id }); // one before the race
    const responses = await Promise.all(
      Array.from({ length: 200 }, () =>
        postJson('/api/microblog/reaction', { post_id: id, reaction_type: 'like' }),
      ),
    );
    expect(responses.map((r) => r.status).filter((s) => s !== 200)).toEqual([]);
    const counts = await Promise.all(
      responses.map(async (r) => ((await r.json()) as { reactions: { like: number } }).reactions.like),
    );
    // Every response saw its own increment: the values are exactly 2..201, each once.
    expect(new Set(counts).size).toBe(200);
    expect(Math.min(...counts)).toBe(2);
    expect(Math.max(...counts)).toBe(201);
    expect((await listed(id)).reactions).toEqual(reactionCounts(0, { like: 201 }));
  });

  test('concurrent reactions of different kinds count separately', async () => {
    const id = await createPost('mixed reactions');
    const responses = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        postJson('/api/microblog/reaction', { postId: String(id), reactionType: REACTION_KINDS[i % 5] }),
      ),
    );
    expect(responses.every((r) => r.status === 200)).toBe(true);
    expect((await listed(id)).reactions).toEqual(reactionCounts(20));
  });

  test('concurrent replies are all stored and counted', async () => {
    const id = await createPost('reply to me');
    const responses = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        postJson('/api/microblog/reply', { post_id: id, content: `reply ${i}` }),
      ),
    );
    expect(responses.every((r) => r.status === 201)).toBe(true);
    const replyIds = await Promise.all(responses.map(async (r) => ((await r.json()) as { id: number }).id));
    expect(new Set(replyIds).size).toBe(60);
    const post = await listed(id);
    expect(post.reply_count).toBe(60);
    expect(post.replies).toHaveLength(60);
  });

  test('concurrent posts get distinct ids and are all listed', async () => {
    const ids = await Promise.all(Array.from({ length: 50 }, (_, i) => createPost(`parallel ${i}`)));
    expect(new Set(ids).size).toBe(50);
    const posts = (await (await fetch(`${server.baseUrl}/api/microblog?limit=500`)).json()) as {
      id: number;
    }[];
    const listedIds = new Set(posts.map((p) => p.id));
    expect(ids.every((id) => listedIds.has(id))).toBe(true);
  });
});
