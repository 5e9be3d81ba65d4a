// The kit's tests need no database: the preset's PostgreSQL global setup is left out.
module.exports = {
  ...require('../../jest.preset.cjs'),
  displayName: require('./package.json').name,
  globalSetup: undefined,
  globalTeardown: undefined,
  // ESM sources name their relative imports with `.js` (Node's rule); Jest runs the `.ts` files.
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
};
