/**
 * The argon2 cost settings: a value argon2 would refuse on every hash (each create_user and password
 * change then a 500) is a configuration error at start; the bounds themselves hash.
 */
import { loadConfig } from '../src/config';
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
