import { resolve } from 'node:path';
import { ESLint } from 'eslint';

const ROOT = resolve(__dirname, '..', '..', '..');

/**
 * The module boundaries the workspace promises: apps may use libs, libs never import apps, a
 * service never imports another service. Checked by linting code that does each, as if it were a
 * file of that project (nothing is written to the tree).
 */
describe('module boundaries (ESLint @nx/enforce-module-boundaries)', () => {
  const eslint = new ESLint({ cwd: ROOT });
  const boundaryErrors = async (filePath: string, code: string) => {
    const [result] = await eslint.lintText(code, { filePath: resolve(ROOT, filePath) });
    return result.messages.filter((m) => m.ruleId === '@nx/enforce-module-boundaries').map((m) => m.message);
  };

  test('an app may import a lib', async () => {
    expect(
      await boundaryErrors(
        'apps/workspace-api/src/zz-check.ts',
        "import { parseEnv } from '@platform/schema';\nexport const f = parseEnv;\n",
      ),
    ).toEqual([]);
  }, 60_000);

  test('a lib may not import an app', async () => {
    const errors = await boundaryErrors(
      'libs/db/src/zz-check.ts',
      "import { seedDemoData } from '@platform/microblog-api/posts/seed';\nexport const f = seedDemoData;\n",
    );
    expect(errors.length).toBeGreaterThan(0);
  }, 60_000);

  test('a service may not import another service', async () => {
    const errors = await boundaryErrors(
      'apps/workspace-api/src/zz-check.ts',
      "import { migrations } from '@platform/microblog-api/db/migrations';\nexport const f = migrations;\n",
    );
    expect(errors).toEqual([
      expect.stringMatching(/type:app.*can only depend on libs tagged with "type:lib"/),
    ]);
  }, 60_000);
});
