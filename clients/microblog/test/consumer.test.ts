import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '@platform/microblog-api/test-support';
import {
  buildPackage,
  consumerProject,
  readmeExamples,
  type ConsumerProject,
} from '@platform/client-kit/testing';
import { createMicroblogClient } from '../src/index.js';

/**
 * The package as a frontend team installs it: built, imported by name from `dist/`, compiled by a
 * strict `tsc`; its README's example compiled the same way and run against the live service.
 */
const PACKAGE = join(__dirname, '..');
const README = readFileSync(join(PACKAGE, 'README.md'), 'utf8');

let project: ConsumerProject;
beforeAll(async () => {
  await buildPackage(PACKAGE);
  project = consumerProject(PACKAGE);
}, 120_000);
afterAll(() => project?.remove());

const consumer = (expectErrors: boolean) => {
  const expected = expectErrors ? '// @ts-expect-error: a wrong field name\n' : '';
  return `import { createMicroblogClient, type Post, type Problem } from '@platform/microblog-client';

const microblog = createMicroblogClient({ baseUrl: 'http://localhost:8887' });

export async function share(): Promise<Post | Problem> {
  const { data, error } = await microblog.POST('/api/microblog', {
    body: { content: 'Hello', quest_topic: 'online_safety', student_name: 'Ada' },
  });
  if (error) return error;
  const content: string = data.content;
  ${expected}  await microblog.POST('/api/microblog', { body: { text: content, quest_topic: 'online_safety' } });
  ${expected}  console.log(data.title);
  return data;
}
`;
};

describe('a consumer of the published package', () => {
  it('compiles in strict mode against dist/, and a wrong field name is a compile error', () => {
    const right = project.compile({ 'consumer.ts': consumer(true) });
    expect(right.errors).toEqual([]);
    expect(right.packageFiles).toContain(join(PACKAGE, 'dist', 'index.d.ts'));
    expect(right.packageFiles.filter((f) => f.includes('/src/'))).toEqual([]);

    const wrong = project.compile({ 'consumer.ts': consumer(false) });
    expect(wrong.errors).toEqual([
      expect.stringMatching(/^consumer\.ts:11: TS2353 .*'text' does not exist/),
      expect.stringMatching(/^consumer\.ts:12: TS2339 Property 'title' does not exist/),
    ]);
  });

  it("compiles the README's example", () => {
    const [example] = readmeExamples(README);
    expect(example).toContain("from '@platform/microblog-client'");
    expect(project.compile({ 'readme.ts': example }).errors).toEqual([]);
  });

  describe("the README's example against the live service", () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer();
    });
    afterAll(() => server?.close());

    it('posts, replies, reacts, lists, pages and follows the live stream', async () => {
      const [example] = readmeExamples(README);
      const running = project.run('readme.ts', example.replaceAll('http://localhost:8887', server.baseUrl));
      try {
        // Its own post, listed by `posts()` (id then content).
        await running.printed(/^\d+ Think before you share$/m);
        // A post written by someone else reaches its live loop (written until the stream has opened).
        const other = createMicroblogClient({ baseUrl: server.baseUrl });
        const reached = running.printed(/^new post Written elsewhere$/m);
        let seen = false;
        void reached.then(
          () => (seen = true),
          () => undefined,
        );
        for (let i = 0; i < 100 && !seen; i++) {
          const { error } = await other.POST('/api/microblog', {
            body: { content: 'Written elsewhere', quest_topic: 'online_safety', student_name: 'Grace' },
          });
          expect(error).toBeUndefined();
          await Promise.race([reached, new Promise((resolve) => setTimeout(resolve, 200))]);
        }
        await reached;
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
