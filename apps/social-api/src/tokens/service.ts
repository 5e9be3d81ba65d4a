import type { Kysely } from 'kysely';
import type { Config } from '../config';
import type { SecretKey } from '../plugins/app/secret-key';
import type { SocialDatabase } from '../db/schema';
import { Unauthorized } from '../errors';
import type { PublicUserRow } from '../users/repository';
import { createJwt, digest, randomToken, sameDigest } from './jwt';
import { createTokensRepository } from './repository';

export interface IssuedPair {
  accessToken: string;
  refreshToken: string;
}

/** Most prune statements one timer run makes (bounded work per run). */
export const PRUNE_BATCHES_PER_RUN = 10;

/** Verified access JWTs remembered (a few hundred bytes each): the callers of the last minutes. */
export const VERIFIED_ACCESS_TOKENS = 10_000;

/**
 * Access and refresh tokens: issuing a pair, checking a bearer, rotating a pair (with a grace
 * period, and revoking every token of the user when a spent refresh token comes back), revoking.
 */
export function createTokenService(
  db: Kysely<SocialDatabase>,
  config: Config,
  clock: () => Date,
  secretKey: SecretKey,
) {
  const repo = createTokensRepository(db);
  /** Made at the first use: the key may come from the database after the app is built. */
  let signer: ReturnType<typeof createJwt> | undefined;
  const jwt = () => (signer ??= createJwt(secretKey.current()));

  /**
   * The stored digest of the token id of a genuine access JWT (undefined: not one). A JWT's
   * signature and token id never change, so each JWT is verified and digested once, then
   * remembered (at most VERIFIED_ACCESS_TOKENS, the oldest forgotten first); whether its pair is
   * still live is asked of the database on every request all the same.
   */
  const verified = new Map<string, string>();
  function verifiedAccess(accessJwt: string): string | undefined {
    let tokenHash = verified.get(accessJwt);
    if (tokenHash === undefined) {
      const tokenId = jwt().accessTokenId(accessJwt);
      if (!tokenId) return undefined;
      tokenHash = digest(tokenId);
      if (verified.size >= VERIFIED_ACCESS_TOKENS) verified.delete(verified.keys().next().value!);
      verified.set(accessJwt, tokenHash);
    }
    return tokenHash;
  }

  async function issue(userId: number): Promise<IssuedPair> {
    const now = clock();
    const tokenId = randomToken();
    const refreshToken = randomToken();
    await repo.insert({
      userId,
      accessTokenHash: digest(tokenId),
      accessExpiration: new Date(now.getTime() + config.accessTokenMs),
      refreshTokenHash: digest(refreshToken),
      refreshExpiration: new Date(now.getTime() + config.refreshTokenMs),
    });
    return { accessToken: jwt().accessToken(tokenId), refreshToken };
  }

  return {
    /** Access and reset JWTs over the service's key. */
    get jwt() {
      return jwt();
    },

    /** A new pair after a login; also forgets (a batch of) pairs that ended more than a day ago. */
    async login(userId: number): Promise<IssuedPair> {
      await repo.clean(clock(), config.tokenPrune.batch);
      return issue(userId);
    },

    /**
     * Forgets pairs that ended more than a day ago (run on a timer, so the table stays bounded while
     * an account only refreshes): batches while they come back full, at most PRUNE_BATCHES_PER_RUN.
     */
    async prune(): Promise<number> {
      let deleted = 0;
      for (let i = 0; i < PRUNE_BATCHES_PER_RUN; i += 1) {
        const batch = await repo.clean(clock(), config.tokenPrune.batch);
        deleted += batch;
        if (batch < config.tokenPrune.batch) break;
      }
      return deleted;
    },

    /** The caller of a bearer token live at `at` (ISO 8601; default now), or undefined. */
    async authenticate(
      accessJwt: string,
      at: string = clock().toISOString(),
    ): Promise<(PublicUserRow & { token_id: string }) | undefined> {
      const tokenHash = verifiedAccess(accessJwt);
      return tokenHash ? repo.authenticate(tokenHash, at) : undefined;
    },

    /**
     * Rotates a pair. The old pair keeps working for the grace period, so racing refreshes from one
     * browser both succeed; a refresh token presented after it ended (expired or rotated) revokes
     * every token of its user, as a replay would.
     */
    async refresh(accessJwt: string, refreshToken: string): Promise<IssuedPair> {
      const tokenId = jwt().accessTokenId(accessJwt);
      const row = tokenId ? await repo.byAccessHash(digest(tokenId)) : undefined;
      if (!row || !sameDigest(row.refresh_token_hash, digest(refreshToken))) throw new Unauthorized();
      const now = clock();
      if (row.refresh_expiration.getTime() <= now.getTime()) {
        await repo.revokeAll(row.user_id);
        throw new Unauthorized();
      }
      await repo.expire(row.id, new Date(now.getTime() + config.graceMsAfterRotation));
      return issue(row.user_id);
    },

    /** Logout: the presented pair ends now. */
    revoke: (tokenRowId: string) => repo.expire(tokenRowId, clock()),

    revokeAll: (userId: number) => repo.revokeAll(userId),

    /** After a password change: every other session of the user ends, the one that made it stays. */
    revokeOthers: (userId: number, keepTokenId: string | undefined) => repo.revokeAllBut(userId, keepTokenId),

    spendOAuth2State: (state: string, expires: Date) => repo.spendOAuth2State(state, expires, clock()),

    issue,
  };
}

export type TokenService = ReturnType<typeof createTokenService>;
