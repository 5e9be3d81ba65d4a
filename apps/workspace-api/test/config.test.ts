/**
 * The argon2 cost settings: a value argon2 would refuse on every hash (each create_user and password
 * change then a 500) is a configuration error at start; the bounds themselves hash.
 */
import { loadConfig } from '../src/config';
import { hashPassword } from '../src/users/passwords';

const env = (vars: Record<string, string>) => ({ LOG_LEVEL: 'silent', ...vars });

describe('argon2 cost configuration', () => {
  test.each([
    ['ARGON2_MEMORY_KIB', '8'],
    ['ARGON2_MEMORY_KIB', '31'],
    ['ARGON2_MEMORY_KIB', String(2 ** 32)],
    ['ARGON2_TIME_COST', '0'],
    ['ARGON2_TIME_COST', String(2 ** 32)],
  ])('%s=%s is refused at start, naming the variable', (name, value) => {
    expect(() => loadConfig(env({ [name]: value }))).toThrow(name);
  });

  test('the smallest accepted memory and time cost hash', async () => {
    const config = loadConfig(env({ ARGON2_MEMORY_KIB: '32', ARGON2_TIME_COST: '1' }));
    expect(config.argon2).toEqual({ memoryCost: 32, timeCost: 1 });
    await expect(hashPassword('a password', config.argon2)).resolves.toMatch(
      /^\$argon2id\$v=19\$m=32,t=1,p=4\$/,
    );
  });
});
