import { sql, type Kysely } from 'kysely';
import type { SocialDatabase, TokenRow } from '../db/schema';
import { param, prepare } from '@platform/db';
import { publicUserColumns, type PublicUserRow } from '../users/repository';

export interface NewTokenPair {
  userId: number;
  accessTokenHash: string;
  accessExpiration: Date;
  refreshTokenHash: string;
  refreshExpiration: Date;
}

/** How long a pair is kept after its refresh token ended. */
export const ENDED_PAIRS_KEPT_MS = 86_400_000;

export function createTokensRepository(db: Kysely<SocialDatabase>) {
  const ownerOfLiveToken = prepare(
    db,
    db
      .selectFrom('tokens')
      .innerJoin('users', 'users.id', 'tokens.user_id')
      .select([...publicUserColumns, 'tokens.id as token_id'])
      .where('tokens.access_token_hash', '=', param<string>(1))
      .where('tokens.access_expiration', '>', param<Date>(2)),
    // The time as ISO 8601 text: pg would format a Date in local time, field by field, per request.
    (accessTokenHash: string, at: string) => [accessTokenHash, at],
  );

  return {
    async insert(pair: NewTokenPair): Promise<void> {
      await db
        .insertInto('tokens')
        .values({
          user_id: pair.userId,
          access_token_hash: pair.accessTokenHash,
          access_expiration: pair.accessExpiration,
          refresh_token_hash: pair.refreshTokenHash,
          refresh_expiration: pair.refreshExpiration,
        })
        .execute();
    },

    /**
     * The owner of a live access token and the token's id: one SELECT per authenticated request (its
     * `last_seen` is written later, coalesced: see plugins/app/auth.ts).
     */
    async authenticate(
      accessTokenHash: string,
      /** ISO 8601. */
      at: string,
    ): Promise<(PublicUserRow & { token_id: string }) | undefined> {
      return (await ownerOfLiveToken(accessTokenHash, at))[0];
    },

    byAccessHash(accessTokenHash: string): Promise<TokenRow | undefined> {
      return db
        .selectFrom('tokens')
        .selectAll()
        .where('access_token_hash', '=', accessTokenHash)
        .executeTakeFirst();
    },

    /** Ends a pair at `at` (never later than it would have ended anyway). */
    async expire(tokenId: string, at: Date): Promise<void> {
      await db
        .updateTable('tokens')
        .set({
          access_expiration: sql`least(access_expiration, ${at})`,
          refresh_expiration: sql`least(refresh_expiration, ${at})`,
        })
        .where('id', '=', tokenId)
        .execute();
    },

    async revokeAll(userId: number): Promise<number> {
      const result = await db.deleteFrom('tokens').where('user_id', '=', userId).executeTakeFirst();
      return Number(result.numDeletedRows);
    },

    /** Deletes every pair of the user but `keepTokenId` (all of them when it is undefined). */
    async revokeAllBut(userId: number, keepTokenId: string | undefined): Promise<number> {
      let query = db.deleteFrom('tokens').where('user_id', '=', userId);
      if (keepTokenId !== undefined) query = query.where('id', '<>', keepTokenId);
      const result = await query.executeTakeFirst();
      return Number(result.numDeletedRows);
    },

    /**
     * Spends an OAuth2 state: true the first time it is presented (on any instance), false after.
     * Also forgets states that have expired by `now`.
     */
    async spendOAuth2State(state: string, expires: Date, now: Date): Promise<boolean> {
      await db.deleteFrom('spent_oauth2_states').where('expires', '<=', now).execute();
      const rows = await db
        .insertInto('spent_oauth2_states')
        .values({ state, expires })
        .onConflict((oc) => oc.doNothing())
        .returning('state')
        .execute();
      return rows.length === 1;
    },

    /**
     * Forgets pairs whose refresh token ended more than a day before `now` (kept that long so a
     * replayed refresh token is still recognised and revokes its user's tokens), at most `batch` rows:
     * DELETE ... WHERE id IN (SELECT id ... LIMIT batch), so one statement's work is bounded.
     */
    async clean(now: Date, batch: number): Promise<number> {
      const ended = new Date(now.getTime() - ENDED_PAIRS_KEPT_MS);
      const result = await db
        .deleteFrom('tokens')
        .where('id', 'in', (qb) =>
          qb.selectFrom('tokens').select('id').where('refresh_expiration', '<', ended).limit(batch),
        )
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    },
  };
}

export type TokensRepository = ReturnType<typeof createTokensRepository>;
