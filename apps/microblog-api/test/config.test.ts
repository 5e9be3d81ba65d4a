import { loadConfig } from '../src/config';

/**
 * The image runs with NODE_ENV=production (the Dockerfile): microblog-api then refuses, as every
 * service does through http-kit's `serviceConfig`, a database password written in this repository
 * unless the server is private.
 */
describe('configuration in production mode', () => {
  test('NODE_ENV is the mode, development by default', () => {
    expect(loadConfig({}).mode).toBe('development');
    expect(loadConfig({ NODE_ENV: 'production' }).mode).toBe('production');
    expect(() => loadConfig({ NODE_ENV: 'staging' })).toThrow(/NODE_ENV/);
  });

  test("a DATABASE_URL with a known password on a server others reach is refused; a private server's passes", () => {
    const production = (url: string) => loadConfig({ NODE_ENV: 'production', DATABASE_URL: url });
    expect(() => production('postgres://u:platform-local@db.example.com/x')).toThrow(
      /^invalid configuration:\n {2}DATABASE_URL: its password/,
    );
    for (const url of ['postgres://u:platform-local@postgres/x', 'postgres://u:platform-local@127.0.0.1/x'])
      expect(production(url).database.url).toBe(url);
    expect(loadConfig({ DATABASE_URL: 'postgres://u:platform-local@db.example.com/x' }).mode).toBe(
      'development',
    );
  });
});
