import type { Passwords } from '../users/passwords';
import type { UsersRepository } from '../users/repository';
import type { IssuedPair, TokenService } from './service';

/**
 * Logins with a password: `name` is a username or an email address. A new pair when the password
 * matches, undefined otherwise (no user, no password, wrong password: the caller cannot tell which).
 */
export function createPasswordLogin(users: UsersRepository, passwords: Passwords, tokens: TokenService) {
  return async function loginWithPassword(name: string, password: string): Promise<IssuedPair | undefined> {
    if (!name || !password) return undefined;
    const user = await users.findForLogin(name);
    // Verified even when no one has that name (against a decoy), so the time taken does not tell either.
    if (!(await passwords.verify(user?.password_hash, password)) || !user) return undefined;
    return tokens.login(user.id);
  };
}
