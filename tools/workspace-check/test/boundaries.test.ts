import { resolve } from 'node:path';
import { ESLint } from 'eslint';

const ROOT = resolve(__dirname, '..', '..', '..');
const eslint = new ESLint({ cwd: ROOT });

/** The messages of `rules` for `code` linted as if it were the file `filePath` (nothing is written). */
async function messagesOf(rules: string[], filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: resolve(ROOT, filePath) });
  return result.messages.filter((m) => rules.includes(m.ruleId ?? '')).map((m) => m.message);
}

/** A file's code that imports `name` from `module` and uses it. */
const importing = (name: string, module: string) =>
  `import { ${name} } from '${module}';\nexport const f = ${name};\n`;

/**
 * The module boundaries the workspace promises: apps may use libs, libs never import apps, a
 * service never imports another service. Checked by linting code that does each, as if it were a
 * file of that project.
 */
describe('module boundaries (ESLint @nx/enforce-module-boundaries)', () => {
  const boundaryErrors = (filePath: string, code: string) =>
    messagesOf(['@nx/enforce-module-boundaries'], filePath, code);

  test('an app may import a lib', async () => {
    expect(
      await boundaryErrors('apps/workspace-api/src/zz-check.ts', importing('parseEnv', '@platform/schema')),
    ).toEqual([]);
  }, 60_000);

  test('a lib may not import an app', async () => {
    const errors = await boundaryErrors(
      'libs/db/src/zz-check.ts',
      importing('seedDemoData', '@platform/microblog-api/posts/seed'),
    );
    expect(errors.length).toBeGreaterThan(0);
  }, 60_000);

  test('a service may not import another service', async () => {
    const errors = await boundaryErrors(
      'apps/workspace-api/src/zz-check.ts',
      importing('migrations', '@platform/microblog-api/db/migrations'),
    );
    expect(errors).toEqual([
      expect.stringMatching(/type:app.*can only depend on libs tagged with "type:lib"/),
    ]);
  }, 60_000);
});

/**
 * Production source (apps/<service>/src, libs/<lib>/src) never imports the test kit nor the local
 * PostgreSQL manager; tests and the kit itself may. The development path may still load the local
 * server with a dynamic `import()`.
 */
describe('no production source imports the test kit or the local PostgreSQL', () => {
  const errors = (filePath: string, code: string) =>
    messagesOf(['@nx/enforce-module-boundaries', 'no-restricted-imports'], filePath, code);
  const kit = importing('buildTestApp', '@platform/testing');
  const local = importing('ensureLocalServer', '@platform/db/local');

  test.each(['apps/social-api/src/zz-check.ts', 'libs/http-kit/src/zz-check.ts'])(
    '%s may not import the test kit',
    async (file) => {
      const found = await errors(file, kit);
      expect(found).toContainEqual(expect.stringMatching(/test kit is for tests/));
      expect(found).toContainEqual(expect.stringMatching(/can only depend on libs tagged with "type:lib"$/));
    },
    60_000,
  );

  test.each(['apps/workspace-api/src/zz-check.ts', 'libs/http-kit/src/zz-check.ts'])(
    '%s may not import the local PostgreSQL statically',
    async (file) => {
      expect(await errors(file, local)).toEqual([
        expect.stringMatching(/local PostgreSQL is for development/),
      ]);
    },
    60_000,
  );

  test('inside libs/db, production source may not import the local PostgreSQL by its path either', async () => {
    const byPath = importing('ensureLocalServer', './local-server');
    expect(await errors('libs/db/src/zz-check.ts', byPath)).toEqual([
      expect.stringMatching(/local PostgreSQL is for development/),
    ]);
    // Its settings (default port, data directory) are not the server: the runtime reads them.
    const settings = importing('localDataDir', './local-settings');
    expect(await errors('libs/db/src/zz-check.ts', settings)).toEqual([]);
  }, 60_000);

  test('the development path may load the local PostgreSQL with a dynamic import', async () => {
    const dynamic = "export const f = async () => (await import('@platform/db/local')).ensureLocalServer;\n";
    expect(await errors('apps/microblog-api/src/zz-check.ts', dynamic)).toEqual([]);
  }, 60_000);

  test.each([
    'apps/microblog-api/test/zz-check.test.ts',
    'apps/microblog-api/test/support/zz-check.ts',
    'libs/http-kit/test/zz-check.test.ts',
  ])(
    'a test (%s) may import the test kit and the local PostgreSQL',
    async (file) => {
      expect(await errors(file, kit)).toEqual([]);
      expect(await errors(file, local)).toEqual([]);
    },
    60_000,
  );

  test('the test kit does not import a service', async () => {
    // The apps' tests import the kit, so this is refused as a cycle before the tags are compared.
    expect(
      await errors(
        'libs/testing/src/zz-check.ts',
        importing('migrations', '@platform/microblog-api/db/migrations'),
      ),
    ).toContainEqual(
      expect.stringMatching(
        /^Circular dependency between "@platform\/testing" and "@platform\/microblog-api"/,
      ),
    );
  }, 60_000);
});

/**
 * The clients (clients/*, tag type:client) are what the frontend teams install: their source uses
 * only other clients (the kit), never a service, a lib or the test kit, and nothing but a client's
 * own contract tests may reach a service (through its test support, a devDependency).
 */
describe('the clients import nothing of the services', () => {
  const boundaryErrors = (filePath: string, code: string) =>
    messagesOf(['@nx/enforce-module-boundaries'], filePath, code);

  test('a client may use the client kit', async () => {
    expect(
      await boundaryErrors(
        'clients/social/src/zz-check.ts',
        importing('eventStream', '@platform/client-kit'),
      ),
    ).toEqual([]);
  }, 60_000);

  test.each([
    ['a service', importing('buildApp', '@platform/social-api')],
    ['a lib', importing('parseEnv', '@platform/schema')],
    ['the test kit', importing('buildTestApp', '@platform/testing')],
  ])(
    'a client’s source may not import %s',
    async (_what, code) => {
      expect(await boundaryErrors('clients/social/src/zz-check.ts', code)).toEqual([
        expect.stringMatching(/type:client.*can only depend on libs tagged with "type:client"/),
      ]);
    },
    60_000,
  );

  test('a client’s contract tests may start the service through its test support', async () => {
    expect(
      await boundaryErrors(
        'clients/social/test/zz-check.test.ts',
        importing('startTestServer', '@platform/social-api/test-support'),
      ),
    ).toEqual([]);
  }, 60_000);

  test.each(['apps/social-api/src/zz-check.ts', 'libs/http-kit/src/zz-check.ts'])(
    '%s may not import a client',
    async (file) => {
      expect(
        (await boundaryErrors(file, importing('createSocialClient', '@platform/social-client'))).length,
      ).toBeGreaterThan(0);
    },
    60_000,
  );
});

/**
 * The one exception: the microblog panel's browser source (apps/microblog-api/panel/src), bundled
 * into the service's /panel.js, uses the service's own typed client. Only that folder, and only
 * clients there (a lib is server code); the service's code and tests still may not import a client.
 */
describe('the microblog panel is built on its client', () => {
  const boundaryErrors = (filePath: string, code: string) =>
    messagesOf(['@nx/enforce-module-boundaries'], filePath, code);
  const client = importing('createMicroblogClient', '@platform/microblog-client');

  test('its browser source may import the microblog client (no cycle reported)', async () => {
    expect(await boundaryErrors('apps/microblog-api/panel/src/zz-check.ts', client)).toEqual([]);
  }, 60_000);

  test('its browser source may not import a lib', async () => {
    expect(
      await boundaryErrors(
        'apps/microblog-api/panel/src/zz-check.ts',
        importing('parseEnv', '@platform/schema'),
      ),
    ).toEqual([expect.stringMatching(/type:app.*can only depend on libs tagged with "type:client"/)]);
  }, 60_000);

  test.each([
    'apps/microblog-api/src/zz-check.ts',
    'apps/microblog-api/test/zz-check.test.ts',
    'apps/social-api/panel/src/zz-check.ts',
  ])(
    '%s may not import a client',
    async (file) => {
      expect((await boundaryErrors(file, client)).length).toBeGreaterThan(0);
    },
    60_000,
  );
});
