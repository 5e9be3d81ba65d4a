import fp from 'fastify-plugin';
import type { SessionEngine } from '../../sessions/engine';
import { SessionLifecycle } from '../../sessions/lifecycle';

declare module 'fastify' {
  interface FastifyInstance {
    /** The sessions' container work (background starts, removals) on the configured engine, if any. */
    sessions: SessionLifecycle;
  }
}

export interface SessionsPluginOptions {
  /** undefined: no engine, the session operations answer that sessions are not available. */
  engine: SessionEngine | undefined;
  /** Whether the app made the engine (and closes it); an engine given by the caller is the caller's. */
  ownsEngine: boolean;
}

/**
 * `app.sessions`: what runs sessions' containers beside the requests. On close, starts still
 * running are cancelled (their sessions fail with a reason saying so) before the database closes.
 */
export default fp<SessionsPluginOptions>(
  async function sessions(app, { engine, ownsEngine }) {
    const { keepaliveSeconds, startTimeoutMs } = app.config.sessions;
    const lifecycle = new SessionLifecycle(
      app.database.db,
      engine,
      { keepaliveSeconds, startTimeoutMs },
      app.log,
    );
    app.decorate('sessions', lifecycle);
    if (engine) app.log.info({ provider: engine.provider, hostname: engine.hostname }, 'session engine');
    app.addHook('onClose', async () => {
      await lifecycle.close();
      if (ownsEngine) await engine?.close();
    });
  },
  { name: 'sessions', dependencies: ['database'] },
);
