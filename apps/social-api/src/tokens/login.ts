import type { HashPriority } from '@platform/passwords';
import type { Passwords } from '../users/passwords';
import type { UsersRepository } from '../users/repository';
import type { IssuedPair, TokenService } from './service';

/**
 * Logins with a password: `name` is a username or an email address. A new pair when the password
 * matches, undefined otherwise (no user, no password, wrong password: the caller cannot tell which).
 * A matching password stored with other argon2 parameters is stored again at today's (only if it
 * has not changed meanwhile).
 */
export function createPasswordLogin(users: UsersRepository, passwords: Passwords, tokens: TokenService) {
  return async function loginWithPassword(
    name: string,
    password: string,
    priority?: HashPriority,
  ): Promise<IssuedPair | undefined> {
    if (!name || !password) return undefined;
    const user = await users.findForLogin(name);
    // Verified even when no one has that name (against a decoy), so the time taken does not tell either.
    const checked = await passwords.check(user?.password_hash, password, priority);
    if (!checked.ok || !user) return undefined;
    if (checked.upgradedHash) await users.replacePassword(user.id, user.password_hash, checked.upgradedHash);
    return tokens.login(user.id);
  };
}
