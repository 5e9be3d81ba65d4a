import { createHash, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** Random alphanumerics from the CSPRNG (no modulo bias: randomInt is uniform). */
export function randomAlphanumeric(length: number): string {
  return Array.from({ length }, () => ALPHANUMERIC[randomInt(ALPHANUMERIC.length)]).join('');
}

/** A new key pair as Kasm issues them: 12-character key, 32-character secret. */
export const newKeyPair = () => ({ apiKey: randomAlphanumeric(12), secret: randomAlphanumeric(32) });

/**
 * Secrets are 190 random bits, so a salted SHA-256 (Kasm's own scheme) is enough; a slow hash
 * would only slow every request down.
 */
export function hashSecret(
  secret: string,
  salt = randomBytes(16).toString('hex'),
): { salt: string; hash: string } {
  return { salt, hash: createHash('sha256').update(salt).update(secret).digest('hex') };
}

/** Constant-time comparison of a presented secret with a stored hash. */
export function secretMatches(secret: string, salt: string, hash: string): boolean {
  const presented = Buffer.from(hashSecret(secret, salt).hash, 'hex');
  const stored = Buffer.from(hash, 'hex');
  return presented.length === stored.length && timingSafeEqual(presented, stored);
}
