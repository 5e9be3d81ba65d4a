// No test here opens a database: the preset's PostgreSQL global setup is left out.
module.exports = {
  ...require('../../jest.preset.cjs'),
  displayName: require('./package.json').name,
  globalSetup: undefined,
  globalTeardown: undefined,
};
