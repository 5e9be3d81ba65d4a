import type { FastifyBaseLogger, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import { BEARER_CHALLENGE, Unauthorized } from '../../errors';
import { createTokenService, type TokenService } from '../../tokens/service';
import { createUsersRepository, type PublicUserRow } from '../../users/repository';

declare module 'fastify' {
  interface FastifyInstance {
    tokens: TokenService;
    /** onRequest hook of every token endpoint: a live `Bearer` access token, else 401. */
    requireToken: onRequestHookHandler;
    /** The `last_seen` times not written yet; `flush()` writes them now (it happens every second and at close). */
    lastSeen: { flush(): Promise<void> };
  }
  interface FastifyRequest {
    /** The authenticated caller (set by `requireToken`), `last_seen` as of this request. */
    user: PublicUserRow;
    /** The caller's token pair (absent under DISABLE_AUTH). */
    tokenId?: string;
  }
}

const BEARER = /^bearer\s+(\S+)\s*$/i;

/** How often the `last_seen` of recent callers is written: what other readers may lag behind. */
export const LAST_SEEN_FLUSH_MS = 1000;

/**
 * `last_seen` of authenticated callers without a write per request: the latest time of each user,
 * kept in memory and written in one statement for all of them (`flush`). A failed write keeps its
 * times for the next one.
 */
function lastSeenWriter(write: (seen: ReadonlyMap<number, Date>) => Promise<void>, log: FastifyBaseLogger) {
  let pending = new Map<number, Date>();
  const keep = (id: number, at: Date) => {
    const known = pending.get(id);
    if (!known || known.getTime() < at.getTime()) pending.set(id, at);
  };
  const writeOnce = async () => {
    if (!pending.size) return;
    const batch = pending;
    pending = new Map();
    try {
      await write(batch);
    } catch (err) {
      for (const [id, at] of batch) keep(id, at);
      log.warn({ err, users: batch.size }, 'writing last_seen failed; kept for the next write');
    }
  };
  // One write at a time: the timer's and close's never overlap.
  let writing = Promise.resolve();
  return { seen: keep, flush: () => (writing = writing.then(writeOnce)) };
}

/**
 * Bearer authentication, as the Flask backend does it: the scheme name in any case, a JWT whose
 * token id is live in the database (one SELECT of the token and its user). Every authenticated
 * request updates `last_seen`: the caller's own responses show this request's time at once; the
 * database gets it within `LAST_SEEN_FLUSH_MS`, coalesced per user, and at close. Failures are 401
 * with `WWW-Authenticate: Bearer realm="Authentication Required"`. Runs before the body is read, so
 * an anonymous caller learns nothing from validation errors. With DISABLE_AUTH (refused in
 * production) every call acts as user 1.
 */
export default fp(
  async function auth(app) {
    const tokens = createTokenService(app.database.db, app.config, app.clock, app.secretKey);
    const users = createUsersRepository(app.database.db);
    const lastSeen = lastSeenWriter((seen) => users.recordLastSeen(seen), app.log);
    app.decorate('tokens', tokens);
    app.decorate('lastSeen', { flush: lastSeen.flush });
    app.decorateRequest('user', null as never);
    app.decorateRequest('tokenId', undefined);

    const timer = setInterval(() => void lastSeen.flush(), LAST_SEEN_FLUSH_MS);
    timer.unref();
    // Registered after the database plugin, so this runs before the database closes.
    app.addHook('onClose', async () => {
      clearInterval(timer);
      await lastSeen.flush();
    });

    /**
     * The caller as seen at this request (`now`, and `at` its ISO 8601 text): never earlier than
     * the database says.
     */
    const seenAt = (user: PublicUserRow, now: Date, at: string): PublicUserRow => {
      lastSeen.seen(user.id, now);
      // Both are ISO 8601 in UTC with milliseconds, so they compare as text.
      if (at > user.last_seen) user.last_seen = at;
      return user;
    };

    /** `toISOString()`, remembered for the last millisecond: requests of one tick share a reading. */
    let lastMs = NaN;
    let lastIso = '';
    const isoOf = (now: Date) => {
      const ms = now.getTime();
      if (ms !== lastMs) {
        lastMs = ms;
        lastIso = now.toISOString();
      }
      return lastIso;
    };

    const reject = (reply: FastifyReply) => {
      reply.header('www-authenticate', BEARER_CHALLENGE);
      return new Unauthorized();
    };

    app.decorate('requireToken', async function requireToken(request: FastifyRequest, reply: FastifyReply) {
      // One clock reading per request, formatted once: for the token check and for last_seen.
      const now = app.clock();
      const at = isoOf(now);
      if (app.config.disableAuth) {
        const user = await users.findById(1);
        if (!user) throw reject(reply);
        request.user = seenAt(user, now, at);
        return;
      }
      const match = BEARER.exec(request.headers.authorization ?? '');
      const caller = match ? await tokens.authenticate(match[1], at) : undefined;
      if (!caller) throw reject(reply);
      request.tokenId = caller.token_id;
      // The row as it came (its token_id too: every response builds its user field by field), not
      // an object rest, which copies the row through V8's generic path on every request.
      request.user = seenAt(caller, now, at);
    });
  },
  {
    name: 'auth',
    dependencies: ['database', 'secret-key'],
    decorators: { fastify: ['config', 'clock'] },
    fastify: '5.x',
  },
);
