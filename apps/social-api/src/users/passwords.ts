import { argon2id, hash, verify } from 'argon2';
import type { Config } from '../config';

/** argon2's lanes per hash; argon2 needs at least 8 KiB of memory per lane. */
export const ARGON2_PARALLELISM = 4;

/**
 * argon2id hashing (the library runs it on libuv's thread pool, off the event loop). Checking a
 * login that names no one still costs one verification, so response times do not reveal which
 * names exist.
 */
export function createPasswords(cost: Config['argon2']) {
  const options = {
    type: argon2id,
    memoryCost: cost.memoryCost,
    timeCost: cost.timeCost,
    parallelism: ARGON2_PARALLELISM,
  } as const;
  let decoy: Promise<string> | undefined;
  return {
    hash: (password: string) => hash(password, options),
    async verify(passwordHash: string | null | undefined, password: string): Promise<boolean> {
      if (!passwordHash) {
        decoy ??= hash('decoy password', options);
        await verify(await decoy, password).catch(() => false);
        return false;
      }
      return verify(passwordHash, password).catch(() => false);
    },
  };
}

export type Passwords = ReturnType<typeof createPasswords>;
