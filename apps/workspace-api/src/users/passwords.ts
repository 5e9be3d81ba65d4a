import { createPasswordHasher, type PasswordHasher } from '@platform/passwords';
import type { Config } from '../config';
import { PasswordRule } from '../errors';

/** Kasm's special characters (the contract's list, which also has `:;<=>?`), or a space. */
const SPECIAL = /[!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~ ]/;

/**
 * Kasm's password rules, in the order they are checked: the first failing one gives the message.
 * Length counts characters (code points), as Python's `len` does.
 */
export const PASSWORD_RULES: readonly { ok: (password: string) => boolean; message: string }[] = [
  { ok: (p) => /[0-9]/.test(p), message: 'Your password must contain at least one number.' },
  { ok: (p) => [...p].length >= 8, message: 'Your password must be at least 8 characters long' },
  { ok: (p) => SPECIAL.test(p), message: 'Your password must contain at least one special character.' },
  { ok: (p) => /\p{Ll}/u.test(p), message: 'Your password must contain at least one lower case character.' },
  { ok: (p) => /\p{Lu}/u.test(p), message: 'Your password must contain at least one upper case character.' },
];

/** The message of the first rule the password breaks, or undefined when it follows them all. */
export function passwordProblem(password: string): string | undefined {
  return PASSWORD_RULES.find((rule) => !rule.ok(password))?.message;
}

/** Throws the first broken rule's message as a 400. */
export function assertPasswordRules(password: string): void {
  const problem = passwordProblem(password);
  if (problem !== undefined) throw new PasswordRule(problem);
}

/** One hasher per configuration, so every request of a service shares its bound on hashes at once. */
const hashers = new WeakMap<Config['argon2'], PasswordHasher>();

/**
 * An argon2id hash in PHC form (`$argon2id$v=19$m=...`), salted by the library, at the configured
 * cost; at most ARGON2_CONCURRENCY at once (ARGON2_QUEUE waiting, then a 503).
 */
export function hashPassword(password: string, cost: Config['argon2']): Promise<string> {
  let hasher = hashers.get(cost);
  if (!hasher) {
    hasher = createPasswordHasher(cost);
    hashers.set(cost, hasher);
  }
  return hasher.hash(password);
}
