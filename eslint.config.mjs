import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import nx from '@nx/eslint-plugin';
import prettier from 'eslint-config-prettier';
import globals from 'globals';

/**
 * Apps may use libs; libs never import apps; a service never imports another service. The test kit
 * (tag type:testing) is for tests: `inTests` says whether the files linted may use it.
 */
const moduleBoundaries = (inTests) => {
  const testing = inTests ? ['type:testing'] : [];
  return [
    'error',
    {
      enforceBuildableLibDependency: true,
      allow: [],
      // http-kit's own tests use the kit, which is built on http-kit; its package.json drops that edge
      // from the project graph (implicitDependencies "!@platform/testing"), so builds have no cycle.
      ignoredCircularDependencies: [['@platform/http-kit', '@platform/testing']],
      depConstraints: [
        { sourceTag: 'type:lib', onlyDependOnLibsWithTags: ['type:lib', ...testing] },
        { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:lib', ...testing] },
        { sourceTag: 'type:testing', onlyDependOnLibsWithTags: ['type:lib'] },
        { sourceTag: 'type:tool', onlyDependOnLibsWithTags: ['type:lib', 'type:app', 'type:testing'] },
      ],
    },
  ];
};

export default [
  { ignores: ['**/dist/**', '**/node_modules/**', '**/.nx/**', '**/.data/**', '**/coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  { plugins: { '@nx': nx } },
  {
    files: ['**/*.ts'],
    rules: {
      '@nx/enforce-module-boundaries': moduleBoundaries(true),
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Production source: what an image runs. It never imports the test kit, nor the local PostgreSQL
    // manager statically (the development path loads `@platform/db/local` with `await import()`, so
    // a production build never evaluates it). The test kit itself and db's test entry are test code.
    files: ['apps/*/src/**/*.ts', 'libs/*/src/**/*.ts'],
    ignores: ['libs/testing/**', 'libs/db/src/testing/**', '**/*.test.ts'],
    rules: {
      '@nx/enforce-module-boundaries': moduleBoundaries(false),
      'no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: '@platform/testing',
              message: 'The test kit is for tests; production source never imports it.',
            },
            {
              name: '@platform/db/local',
              message:
                'The local PostgreSQL is for development: load it with `await import()` on the dev path.',
            },
          ],
          patterns: [
            {
              group: ['@platform/testing/*'],
              message: 'The test kit is for tests; production source never imports it.',
            },
            {
              // The same module by its path, from inside libs/db.
              group: ['**/local-server', '**/local-server.js'],
              message:
                'The local PostgreSQL is for development: load it with `await import()` on the dev path.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.cjs', '**/*.mjs', '**/*.js'],
    languageOptions: { globals: { ...globals.node } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    files: ['apps/*/public/**/*.js'],
    languageOptions: { sourceType: 'script', globals: { ...globals.browser } },
  },
  {
    // Migrations are frozen in time: they see the database as Kysely<any>, never the app's types.
    files: ['**/db/migrations/**/*.ts', '**/test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  prettier,
];
