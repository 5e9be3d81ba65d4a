import { join } from 'node:path';
import { startTestServer, type TestServer } from '@platform/microblog-api/test-support';
import { consumerTests, writeUntilPrinted } from '@platform/client-kit/testing';
import { createMicroblogClient } from '../src/index.js';

/**
 * The package as a frontend team installs it: built, imported by name from `dist/`, compiled by a
 * strict `tsc`; its README's example compiled the same way and run against the live service.
 */
const marker = (marked: boolean) => (marked ? '// @ts-expect-error: a wrong field name\n' : '');
const consumer = (
  marked: boolean,
) => `import { createMicroblogClient, type Post, type Problem } from '@platform/microblog-client';

const microblog = createMicroblogClient({ baseUrl: 'http://localhost:8887' });

export async function share(): Promise<Post | Problem> {
  const { data, error } = await microblog.POST('/api/microblog', {
    body: { content: 'Hello', quest_topic: 'online_safety', student_name: 'Ada' },
  });
  if (error) return error;
  const content: string = data.content;
  ${marker(marked)}  await microblog.POST('/api/microblog', { body: { text: content, quest_topic: 'online_safety' } });
  ${marker(marked)}  console.log(data.title);
  return data;
}
`;

describe('a consumer of the published package', () => {
  const { project, example } = consumerTests({
    packageDirectory: join(__dirname, '..'),
    consumer,
    unmarkedErrors: [
      /^consumer\.ts:11: TS2353 .*'text' does not exist/,
      /^consumer\.ts:12: TS2339 Property 'title' does not exist/,
    ],
  });

  describe("the README's example against the live service", () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer();
    });
    afterAll(() => server?.close());

    it('posts, replies, reacts, lists, pages and follows the live stream', async () => {
      const running = project().run('readme.ts', example.replaceAll('http://localhost:8887', server.baseUrl));
      try {
        // Its own post, listed by `posts()` (id then content).
        await running.printed(/^\d+ Think before you share$/m);
        // A post written by someone else reaches its live loop.
        const other = createMicroblogClient({ baseUrl: server.baseUrl });
        await writeUntilPrinted(running, /^new post Written elsewhere$/m, async () => {
          const { error } = await other.POST('/api/microblog', {
            body: { content: 'Written elsewhere', quest_topic: 'online_safety', student_name: 'Grace' },
          });
          expect(error).toBeUndefined();
        });
        // Its reply and reaction reached the service.
        const { data } = await other.GET('/api/microblog', { params: { query: { topic: 'online_safety' } } });
        const own = data!.find((p) => p.content === 'Think before you share')!;
        expect(own.replies.map((r) => r.content)).toEqual(['Agreed']);
        expect(own.reactions.love).toBe(1);
        expect(running.output()).not.toMatch(/Error|error/);
      } finally {
        running.kill();
      }
    }, 60_000);
  });
});
