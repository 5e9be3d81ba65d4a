import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { createSigner, createVerifier } from 'fast-jwt';

/** A random url-safe secret of 43 characters (256 bits), as the Flask backend makes them. */
export const randomToken = () => randomBytes(32).toString('base64url');

/** What the database stores instead of a token: its SHA-256 (a stolen table reveals no usable token). */
export const digest = (token: string) => createHash('sha256').update(token).digest('base64url');

export const sameDigest = (a: string, b: string) =>
  a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

const isCanonicalBase64url = (segment: string) =>
  Buffer.from(segment, 'base64url').toString('base64url') === segment;

/**
 * HS256 JWTs over SECRET_KEY. Access tokens carry only the random `token` id (expiry is kept in
 * the database, as in the Flask backend); reset tokens carry `reset_email`, `exp` and a
 * fingerprint of the password they replace, so a used link stops working.
 */
export function createJwt(secretKey: string) {
  const sign = createSigner({ key: secretKey, algorithm: 'HS256', noTimestamp: true });
  // Expiry is checked against the service's clock below, not fast-jwt's.
  const verify = createVerifier({
    key: secretKey,
    algorithms: ['HS256'],
    ignoreExpiration: true,
    ignoreNotBefore: true,
  });

  const decode = (token: string): Record<string, unknown> | undefined => {
    // One token, one spelling: base64url's last character has unused bits that decoders ignore,
    // so a signature could be written several ways; only the canonical encoding is accepted.
    const segments = token.split('.');
    if (segments.length !== 3 || !segments.every(isCanonicalBase64url)) return undefined;
    try {
      const payload = verify(token) as unknown;
      return payload && typeof payload === 'object' ? (payload as Record<string, unknown>) : undefined;
    } catch {
      return undefined;
    }
  };

  return {
    accessToken: (tokenId: string) => sign({ token: tokenId }),
    /** The token id of a genuine access JWT, else undefined (tampered, foreign, not a JWT). */
    accessTokenId(jwt: string): string | undefined {
      const claim = decode(jwt)?.token;
      return typeof claim === 'string' && claim.length > 0 ? claim : undefined;
    },
    resetToken: (email: string, fingerprint: string, expiresAt: Date) =>
      sign({ exp: Math.floor(expiresAt.getTime() / 1000), reset_email: email, fp: fingerprint }),
    /** The email and fingerprint of a genuine, unexpired reset token. */
    resetClaims(jwt: string, now: Date): { email: string; fingerprint: string } | undefined {
      const claims = decode(jwt);
      if (
        !claims ||
        typeof claims.reset_email !== 'string' ||
        typeof claims.fp !== 'string' ||
        typeof claims.exp !== 'number'
      )
        return undefined;
      if (claims.exp * 1000 <= now.getTime()) return undefined;
      return { email: claims.reset_email, fingerprint: claims.fp };
    },
  };
}

/**
 * A reset link's fingerprint of its user: an HMAC of the current password hash (none included)
 * keyed by the user's own random `reset_secret`. It changes whenever the password does, which
 * retires the link; and without the user's secret, which never leaves the database, SECRET_KEY
 * alone cannot make a link that works, even for a user without a password.
 */
export const resetFingerprint = (user: { password_hash: string | null; reset_secret: string }) =>
  createHmac('sha256', user.reset_secret)
    .update(`pw:${user.password_hash ?? ''}`)
    .digest('base64url')
    .slice(0, 32);
