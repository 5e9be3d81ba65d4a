import { createPasswordHasher, type PasswordHasher } from '@platform/passwords';
import type { Config } from '../config';

/**
 * The service's password hashing: argon2id at the configured cost (OWASP's by default), a bounded
 * number at once, a decoy verification for names no one has, outdated hashes re-hashed on login.
 */
export function createPasswords(config: Pick<Config, 'passwordHashing'>): Passwords {
  return createPasswordHasher(config.passwordHashing);
}

export type Passwords = PasswordHasher;
