import type { FastifyInstance } from 'fastify';
import type { OpenStream } from '@platform/http-kit';
import type { EventsRepository } from './repository';

interface Watched {
  tokenId: string;
  /** When its access token ends, as read when the stream opened (undefined until read). */
  expiresAt?: number;
}

/**
 * Ends each stream with `token_expired` once its access token is no longer live: one statement every
 * `intervalMs` for all of this process's streams (while there are some), whatever ended the token
 * (its time, a logout, a reset, a refresh replayed; also a change made by hand in the database).
 * `expired` when its time is up as read at open, else `revoked` (logout ends a pair by moving its
 * expiration to now; the others delete it).
 */
export function createTokenWatch(app: FastifyInstance, events: EventsRepository, intervalMs: number) {
  const streams = new Map<OpenStream, Watched>();
  let timer: NodeJS.Timeout | undefined;
  let checking: Promise<void> | undefined;

  const end = (stream: OpenStream, reason: 'expired' | 'revoked') => {
    streams.delete(stream);
    stream.endWith('token_expired', { reason });
  };

  const check = async () => {
    if (streams.size === 0) return;
    const now = app.clock();
    const live = await events.liveTokens([...new Set([...streams.values()].map((w) => w.tokenId))], now);
    for (const [stream, watched] of streams)
      if (!live.has(watched.tokenId))
        end(
          stream,
          watched.expiresAt !== undefined && watched.expiresAt <= now.getTime() ? 'expired' : 'revoked',
        );
  };

  const tick = () => {
    checking ??= check()
      .catch((err: unknown) => app.log.warn({ err }, 'checking the streams’ tokens failed'))
      .finally(() => (checking = undefined));
  };

  app.addHook('onClose', async () => {
    clearInterval(timer);
    timer = undefined;
    await checking;
  });

  return {
    /** Watches `stream`, opened with pair `tokenId` (none with DISABLE_AUTH: nothing to watch). */
    add(tokenId: string | undefined, stream: OpenStream): void {
      if (tokenId === undefined) return;
      const watched: Watched = { tokenId };
      streams.set(stream, watched);
      void stream.closed.then(() => streams.delete(stream));
      events
        .accessExpiration(tokenId)
        .then((at) => {
          if (at === undefined) return streams.has(stream) && end(stream, 'revoked');
          watched.expiresAt = at.getTime();
        })
        .catch((err: unknown) => app.log.warn({ err }, 'reading a stream’s token failed'));
      if (timer === undefined) {
        timer = setInterval(() => {
          if (streams.size === 0) {
            clearInterval(timer);
            timer = undefined;
          } else tick();
        }, intervalMs);
        timer.unref();
      }
    },
    /** One check now (tests, without waiting for the timer). */
    check: () => (tick(), checking ?? Promise.resolve()),
  };
}
