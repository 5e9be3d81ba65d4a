/**
 * Configuration refused at start. The argon2 cost settings: a value argon2 would refuse on every hash
 * (each create_user and password change then a 500) is a configuration error at start; the bounds
 * themselves hash. The bootstrap secret: never a typo, never a public value in production.
 */
import { randomBytes } from 'node:crypto';
import { KNOWN_SECRETS } from '@platform/http-kit';
import { loadConfig, MIN_BOOTSTRAP_SECRET_LENGTH } from '../src/config';
import { hashPassword } from '../src/users/passwords';

const env = (vars: Record<string, string>) => ({ LOG_LEVEL: 'silent', ...vars });

describe('argon2 cost configuration', () => {
  test.each([
    ['ARGON2_MEMORY_KIB', '7'],
    ['ARGON2_MEMORY_KIB', '0'],
    ['ARGON2_MEMORY_KIB', String(2 ** 32)],
    ['ARGON2_TIME_COST', '0'],
    ['ARGON2_TIME_COST', String(2 ** 32)],
  ])('%s=%s is refused at start, naming the variable', (name, value) => {
    expect(() => loadConfig(env({ [name]: value }))).toThrow(name);
  });

  test('memory below 8 KiB per lane is refused at start', () => {
    expect(() => loadConfig(env({ ARGON2_MEMORY_KIB: '31', ARGON2_PARALLELISM: '4' }))).toThrow(
      'ARGON2_MEMORY_KIB',
    );
  });

  test('the smallest accepted memory and time cost hash', async () => {
    const config = loadConfig(env({ ARGON2_MEMORY_KIB: '8', ARGON2_TIME_COST: '1' }));
    expect(config.argon2).toMatchObject({ memoryKib: 8, timeCost: 1, parallelism: 1 });
    await expect(hashPassword('a password', config.argon2)).resolves.toMatch(
      /^\$argon2id\$v=19\$m=8,t=1,p=1\$/,
    );
  });

  test("the defaults are OWASP's argon2id row: 19 MiB, 2 passes, 1 lane", async () => {
    const config = loadConfig(env({}));
    expect(config.argon2).toMatchObject({ memoryKib: 19456, timeCost: 2, parallelism: 1 });
    await expect(hashPassword('a password', config.argon2)).resolves.toMatch(
      /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/,
    );
  });
});

describe('the bootstrap key secret and production mode', () => {
  const random = () => randomBytes(32).toString('hex');
  const production = (vars: Record<string, string>) => env({ NODE_ENV: 'production', ...vars });

  test.each(['development', 'test', 'production'])(
    `in %s mode a secret shorter than ${MIN_BOOTSTRAP_SECRET_LENGTH} characters is refused as a typo`,
    (mode) => {
      for (const secret of ['x', 'a'.repeat(MIN_BOOTSTRAP_SECRET_LENGTH - 1)])
        expect(() =>
          loadConfig(env({ NODE_ENV: mode, BOOTSTRAP_API_KEY: 'Boot', BOOTSTRAP_API_KEY_SECRET: secret })),
        ).toThrow('BOOTSTRAP_API_KEY_SECRET');
    },
  );

  test('development accepts a 16-character secret; production refuses it (shorter than 32)', () => {
    const vars = { BOOTSTRAP_API_KEY: 'Boot', BOOTSTRAP_API_KEY_SECRET: 'sixteen-chars-ok' };
    expect(loadConfig(env(vars)).bootstrapKey).toEqual({ apiKey: 'Boot', secret: 'sixteen-chars-ok' });
    expect(() => loadConfig(production(vars))).toThrow(/BOOTSTRAP_API_KEY_SECRET: must be at least 32/);
  });

  test('production refuses every known secret, the old compose default first, and accepts a random one', () => {
    expect(() =>
      loadConfig(
        production({
          BOOTSTRAP_API_KEY: 'LocalAdminKey',
          BOOTSTRAP_API_KEY_SECRET: 'local-admin-secret-change-me-0001',
        }),
      ),
    ).toThrow(/BOOTSTRAP_API_KEY_SECRET: this value is written in the repository/);
    for (const known of KNOWN_SECRETS.filter((s) => s.length >= MIN_BOOTSTRAP_SECRET_LENGTH))
      expect(() =>
        loadConfig(production({ BOOTSTRAP_API_KEY: 'Boot', BOOTSTRAP_API_KEY_SECRET: known })),
      ).toThrow('BOOTSTRAP_API_KEY_SECRET');
    const secret = random();
    expect(
      loadConfig(production({ BOOTSTRAP_API_KEY: 'Boot', BOOTSTRAP_API_KEY_SECRET: secret })).bootstrapKey,
    ).toEqual({ apiKey: 'Boot', secret });
  });

  test('a key without a secret gets a generated one at creation (no secret in the configuration)', () => {
    const config = loadConfig(production({ BOOTSTRAP_API_KEY: 'Boot' }));
    expect(config.mode).toBe('production');
    expect(config.bootstrapKey).toEqual({ apiKey: 'Boot', secret: undefined });
  });

  test('a secret without its key is refused instead of ignored', () => {
    expect(() => loadConfig(env({ BOOTSTRAP_API_KEY_SECRET: random() }))).toThrow(
      /BOOTSTRAP_API_KEY_SECRET: set BOOTSTRAP_API_KEY too/,
    );
  });

  test("production refuses a DATABASE_URL with a known or short password on a public host; compose's private one passes", () => {
    expect(() =>
      loadConfig(
        production({ DATABASE_URL: 'postgres://platform:platform-local@db.example.com:5432/platform' }),
      ),
    ).toThrow(/DATABASE_URL: its password/);
    expect(() =>
      loadConfig(production({ DATABASE_URL: 'postgres://platform:short@10.0.0.7/platform' })),
    ).toThrow(/DATABASE_URL: its password/);
    for (const url of [
      'postgres://platform:platform-local@postgres:5432/platform', // compose: never published
      'postgres://platform:platform-local@127.0.0.1:5432/platform',
      'postgres://platform:platform-local@localhost/platform',
      `postgres://platform:${random()}@db.example.com/platform`,
      'postgres://platform@db.example.com/platform', // no password: trust, a certificate or .pgpass
    ])
      expect(loadConfig(production({ DATABASE_URL: url })).database.url).toBe(url);
    // Development takes any local setup.
    expect(() =>
      loadConfig(env({ DATABASE_URL: 'postgres://platform:platform-local@db.example.com/platform' })),
    ).not.toThrow();
  });
});
