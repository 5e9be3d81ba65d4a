import { join } from 'node:path';
import { startTestServer, type TestServer } from '@platform/social-api/test-support';
import { consumerTests, writeUntilPrinted } from '@platform/client-kit/testing';
import { createSocialClient } from '../src/index.js';

/**
 * The package as a frontend team installs it: built, imported by name from `dist/`, compiled by a
 * strict `tsc`; its README's example compiled the same way and run against the live service.
 */
const marker = (marked: boolean) => (marked ? '// @ts-expect-error: a wrong field name\n' : '');
const consumer = (
  marked: boolean,
) => `import { createSocialClient, type Post, type SocialError } from '@platform/social-client';

const social = createSocialClient({ baseUrl: 'http://localhost:5000' });

export async function share(): Promise<Post | SocialError> {
  const { data, error } = await social.POST('/api/posts', { body: { text: 'Hello' } });
  if (error) return error;
  const author: string = data.author.username;
  ${marker(marked)}  await social.POST('/api/posts', { body: { content: author } });
  ${marker(marked)}  console.log(data.body);
  return data;
}
`;

describe('a consumer of the published package', () => {
  const { project, example } = consumerTests({
    packageDirectory: join(__dirname, '..'),
    consumer,
    unmarkedErrors: [
      /^consumer\.ts:9: TS2353 .*'content' does not exist/,
      /^consumer\.ts:10: TS2339 Property 'body' does not exist/,
    ],
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

      const running = project().run('readme.ts', example.replaceAll('http://localhost:5000', server.baseUrl));
      try {
        // Its post in the feed, then the validation error's field (Flask's errors.json shape).
        await running.printed(/^susan Hello from the typed client$/m);
        await running.printed(/^\[ 'Use a different username\.' \]$/m);
        // A post of susan's written elsewhere reaches its live feed.
        await writeUntilPrinted(running, /^new in my feed: Written elsewhere$/m, async () => {
          const { error } = await susan.POST('/api/posts', { body: { text: 'Written elsewhere' } });
          expect(error).toBeUndefined();
        });
        expect(running.output()).not.toMatch(/Error|error/);
      } finally {
        running.kill();
      }
    }, 60_000);
  });
});
