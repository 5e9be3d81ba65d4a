import type { FastifyBaseLogger } from 'fastify';
import fp from 'fastify-plugin';
import { Reconciler, type ReconcileReport } from '../../sessions/reconciler';
import { Sweeper, type SweepReport } from '../../sessions/sweeper';

/**
 * A task run now and then every `everyMs` after each run ends (never two at once in this process),
 * on an unref'd timer; `run()` runs it at once (after the run under way, if any).
 */
class Periodic<T> {
  private timer: NodeJS.Timeout | undefined;
  private current: Promise<T | undefined> = Promise.resolve(undefined);
  private stopped = true;

  constructor(
    private readonly name: string,
    private readonly everyMs: number,
    private readonly task: () => Promise<T>,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** Runs the task once more, after any run under way; rejects with its error. */
  run(): Promise<T> {
    const next = this.current.catch(() => undefined).then(() => this.task());
    this.current = next.catch(() => undefined);
    return next;
  }

  /** Runs the task `firstAfterMs` from now (at once by default), then periodically. */
  start(firstAfterMs = 0): void {
    this.stopped = false;
    if (firstAfterMs <= 0) return this.tick();
    this.timer = setTimeout(() => this.tick(), firstAfterMs);
    this.timer.unref();
  }

  /** No further run; resolves once the run under way has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.current;
  }

  private tick(): void {
    if (this.stopped) return;
    void this.run()
      .catch((error: unknown) =>
        this.log.warn({ err: error }, `${this.name} failed; retried in ${this.everyMs} ms`),
      )
      .finally(() => {
        if (this.stopped) return;
        this.timer = setTimeout(() => this.tick(), this.everyMs);
        this.timer.unref();
      });
  }
}

export interface SessionUpkeep {
  /** Reconciles the engine with the sessions now (null: another replica is at it). */
  reconcile(): Promise<ReconcileReport | null>;
  /** Destroys the expired sessions now (null: another replica is at it). */
  sweep(): Promise<SweepReport | null>;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The reconciler and the expiry sweeper (undefined without an engine). */
    sessionUpkeep: SessionUpkeep | undefined;
  }
}

/**
 * `app.sessionUpkeep`: with a session engine, the reconciler (once when the app is ready, then every
 * SESSIONS_RECONCILE_MS) and the expiry sweeper (every SESSIONS_SWEEP_MS), each on an unref'd timer,
 * stopped when the app closes (a run under way is waited for, before the engine and the database
 * close). Without an engine, nothing runs.
 */
export default fp(
  async function sessionUpkeep(app) {
    const engine = app.sessions.engine;
    if (!engine) {
      app.decorate('sessionUpkeep', undefined);
      return;
    }
    const { startTimeoutMs, reconcileMs, sweepMs } = app.config.sessions;
    const log = app.log.child({ component: 'session-upkeep' });
    const reconciler = new Reconciler(app.database.db, engine, { startTimeoutMs }, log);
    const sweeper = new Sweeper(app.database.db, engine, app.sessions, log);
    const reconciling = new Periodic(
      'session reconciliation',
      reconcileMs,
      async () => {
        const report = await reconciler.run();
        const changed = report && Object.values(report).some((ids: string[]) => ids.length);
        if (changed) log.info(report, 'sessions reconciled');
        return report;
      },
      log,
    );
    const sweeping = new Periodic('session expiry sweep', sweepMs, () => sweeper.run(), log);
    app.decorate('sessionUpkeep', { reconcile: () => reconciling.run(), sweep: () => sweeping.run() });

    app.addHook('onReady', async () => {
      reconciling.start();
      // The reconciliation at start goes first.
      sweeping.start(Math.min(sweepMs, 1000));
    });
    app.addHook('onClose', async () => {
      await Promise.all([reconciling.stop(), sweeping.stop()]);
    });
  },
  { name: 'session-upkeep', dependencies: ['sessions', 'database'] },
);
