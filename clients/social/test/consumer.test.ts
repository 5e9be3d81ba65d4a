import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '@platform/social-api/test-support';
import {
  buildPackage,
  consumerProject,
  readmeExamples,
  type ConsumerProject,
} from '@platform/client-kit/testing';
import { createSocialClient } from '../src/index.js';

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
  return `import { createSocialClient, type Post, type SocialError } from '@platform/social-client';

const social = createSocialClient({ baseUrl: 'http://localhost:5000' });

export async function share(): Promise<Post | SocialError> {
  const { data, error } = await social.POST('/api/posts', { body: { text: 'Hello' } });
  if (error) return error;
  const author: string = data.author.username;
  ${expected}  await social.POST('/api/posts', { body: { content: author } });
  ${expected}  console.log(data.body);
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
      expect.stringMatching(/^consumer\.ts:9: TS2353 .*'content' does not exist/),
      expect.stringMatching(/^consumer\.ts:10: TS2339 Property 'body' does not exist/),
    ]);
  });

  it("compiles the README's example", () => {
    const [example] = readmeExamples(README);
    expect(example).toContain("from '@platform/social-client'");
    expect(project.compile({ 'readme.ts': example }).errors).toEqual([]);
  });

  describe("the README's example against the live service", () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer();
    });
    afterAll(() => server?.close());

    it('logs in, posts, reads the feed, shows a validation error and follows the live feed', async () => {
      const susan = createSocialClient({ baseUrl: server.baseUrl });
      const created = await susan.POST('/api/users', {
        body: { username: 'susan', email: 'susan@example.com', password: 'dog' },
      });
      expect(created.response.status).toBe(201);
      expect((await susan.login('susan', 'dog')).error).toBeUndefined();

      const [example] = readmeExamples(README);
      const running = project.run('readme.ts', example.replaceAll('http://localhost:5000', server.baseUrl));
      try {
        // Its post in the feed, then the validation error's field (Flask's errors.json shape).
        await running.printed(/^susan Hello from the typed client$/m);
        await running.printed(/^\[ 'Use a different username\.' \]$/m);
        // A post of susan's written elsewhere reaches its live feed (written until the stream has opened).
        const reached = running.printed(/^new in my feed: Written elsewhere$/m);
        let seen = false;
        void reached.then(
          () => (seen = true),
          () => undefined,
        );
        for (let i = 0; i < 100 && !seen; i++) {
          const { error } = await susan.POST('/api/posts', { body: { text: 'Written elsewhere' } });
          expect(error).toBeUndefined();
          await Promise.race([reached, new Promise((resolve) => setTimeout(resolve, 200))]);
        }
        await reached;
        expect(running.output()).not.toMatch(/Error|error/);
      } finally {
        running.kill();
      }
    }, 60_000);
  });
});
