module.exports = {
  ...require('../../jest.preset.cjs'),
  displayName: require('./package.json').name,
  // Every response a test receives is proven against the service's OpenAPI document.
  setupFilesAfterEnv: ['<rootDir>/../../libs/testing/src/documents/jest-setup.ts'],
};
