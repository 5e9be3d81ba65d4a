// Shared Jest settings. @swc/jest strips types only (run `tsc` through the typecheck target);
// ESM-only dependencies are transformed to CommonJS because Jest on Node 20 cannot require() them.
const esmOnly = ['@faker-js/faker', 'typebox'];

// `npm test` needs nothing but Node (PostgreSQL and Chromium come from npm packages). System tests
// (`*.system.test.ts`) need what the machine provides: a Docker engine, HAProxy, Redis, kubectl; they
// run with `npm run test:system` (PLATFORM_SYSTEM_TESTS=1), as .ci/run does.
const system = process.env.PLATFORM_SYSTEM_TESTS === '1';

module.exports = {
  testEnvironment: 'node',
  testMatch: system
    ? ['<rootDir>/test/**/*.system.test.ts']
    : ['<rootDir>/src/**/*.test.ts', '<rootDir>/test/**/*.test.ts'],
  testPathIgnorePatterns: system ? ['/node_modules/'] : ['/node_modules/', '\\.system\\.test\\.ts$'],
  transform: {
    '^.+\\.(t|j|mj|cj)s$': [
      '@swc/jest',
      {
        jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
        module: { type: 'commonjs' },
      },
    ],
  },
  transformIgnorePatterns: [`/node_modules/(?!(${esmOnly.join('|')})/)`],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'cjs', 'json'],
  // Workspace libraries resolve to their TypeScript sources under test (no build needed).
  testEnvironmentOptions: { customExportConditions: ['@platform/source', 'node', 'node-addons'] },
  testTimeout: 30000,
  // Without DATABASE_URL: the local PostgreSQL server for the whole run (see libs/db/src/local-server.ts).
  globalSetup: `${__dirname}/libs/db/src/testing/jest-global-setup.ts`,
  globalTeardown: `${__dirname}/libs/db/src/testing/jest-global-teardown.ts`,
};
