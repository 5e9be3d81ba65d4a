// Contract tests: the real service on a real port (its own test support, over the preset's
// PostgreSQL), called through this client.
module.exports = {
  ...require('../../jest.preset.cjs'),
  displayName: require('./package.json').name,
  // ESM sources name their relative imports with `.js` (Node's rule); Jest runs the `.ts` files.
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  // Every response the service answers the client is proven against its OpenAPI document.
  setupFilesAfterEnv: ['<rootDir>/../../libs/testing/src/documents/jest-setup.ts'],
};
