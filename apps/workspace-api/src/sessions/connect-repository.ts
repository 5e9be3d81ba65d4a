import { sql, type Kysely } from 'kysely';
import type { SessionState, WorkspaceDatabase } from '../db/schema';

/**
 * The statements of reaching a session: the connect page's token exchange and the reverse proxy's
 * look-up. Ids are the database (dashed) form.
 */
export function createConnectRepository(db: Kysely<WorkspaceDatabase>) {
  return {
    /**
     * Exchanges a connect token once: when `hash` is the session's current, unexpired token, the
     * session is `userId`'s and not over, the token is cleared and the session answered (one
     * statement: of two exchanges at once, the second finds the token gone). Anything else changes
     * nothing (a wrong user does not burn the owner's token).
     */
    consumeConnectToken(
      id: string,
      userId: string,
      hash: string,
    ): Promise<{ id: string; user_id: string; state: SessionState } | undefined> {
      return db
        .updateTable('sessions')
        .set({ connect_token_hash: null, connect_token_expires: null })
        .where('id', '=', id)
        .where('user_id', '=', userId)
        .where('connect_token_hash', '=', hash)
        .where('connect_token_expires', '>', sql<Date>`now()`)
        .where('state', 'in', ['requested', 'starting', 'running'])
        .returning(['id', 'user_id', 'state'])
        .executeTakeFirst();
    },

    /** What the proxy needs of a session: its owner, state, progress and container (a primary-key lookup). */
    findForProxy(id: string) {
      return db
        .selectFrom('sessions')
        .select(['user_id', 'state', 'progress', 'message', 'container_id'])
        .where('id', '=', id)
        .executeTakeFirst();
    },
  };
}

export type ConnectRepository = ReturnType<typeof createConnectRepository>;
