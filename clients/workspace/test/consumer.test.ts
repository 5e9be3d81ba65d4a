import { join } from 'node:path';
import { startTestServer, type TestServer } from '@platform/workspace-api/test-support';
import { consumerTests } from '@platform/client-kit/testing';
import { createWorkspaceClient } from '../src/index.js';

/**
 * The package as a script author installs it: built, imported by name from `dist/`, compiled by a
 * strict `tsc`; its README's example compiled the same way and run against the live service.
 */
const marker = (marked: boolean) => (marked ? '// @ts-expect-error: a wrong field name\n' : '');
const consumer = (
  marked: boolean,
) => `import { createWorkspaceClient, type KasmError } from '@platform/workspace-client';

const workspace = createWorkspaceClient({ baseUrl: 'http://localhost:8080', api_key: 'k', api_key_secret: 's' });

export async function enrol(): Promise<string | KasmError> {
  const { data, error } = await workspace.call('create_user', { target_user: { username: 'ada' } });
  if (error) return error;
  const id: string = data.user.user_id;
  ${marker(marked)}  await workspace.call('create_user', { target_user: { user_name: id } });
  ${marker(marked)}  return data.user.user_name;
}
`;

describe('a consumer of the published package', () => {
  const { project, example } = consumerTests({
    packageDirectory: join(__dirname, '..'),
    consumer,
    unmarkedErrors: [
      /^consumer\.ts:9: TS\d+ .*'username'/,
      /^consumer\.ts:10: TS2551 Property 'user_name' does not exist/,
    ],
  });

  describe("the README's example against the live service", () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer();
    });
    afterAll(() => server?.close());

    it('creates a user, lists users, creates a group and puts the user in it', async () => {
      const running = project().run(
        'readme.ts',
        example.replaceAll('http://localhost:8080', server.baseUrl),
        {
          API_KEY: server.admin.api_key,
          API_KEY_SECRET: server.admin.api_key_secret,
        },
      );
      expect(await running.exited).toBe(0);
      expect(running.output()).toBe('1 users; ada is in Developers true\n');

      const admin = createWorkspaceClient({ baseUrl: server.baseUrl, ...server.admin });
      const { data } = await admin.call('get_user', { target_user: { username: 'ada' } });
      expect(data!.user.groups.map((g) => g.name).sort()).toEqual(['All Users', 'Developers']);
    }, 60_000);
  });
});
