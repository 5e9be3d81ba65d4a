import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { WorkspaceDatabase } from '../db/schema';
import type { SessionEngine } from './engine';
import type { SessionLifecycle } from './lifecycle';
import { createSessionsRepository } from './repository';
import { createUpkeepRepository } from './upkeep-repository';

/** The reason an expired session's row keeps. */
export const EXPIRED_REASON = 'The session expired (no keepalive in time)';

/** What one sweep did (the session ids in the database form). */
export interface SweepReport {
  /** Expired sessions destroyed: stopping, their container removed, stopped. */
  destroyed: string[];
  /** Expired sessions left `stopping` because the engine could not remove their container (the reconciler retries). */
  failed: string[];
}

export interface SweeperSettings {
  /** Most sessions one sweep destroys (the next sweep goes on); default 200. */
  batch?: number;
  /** Destroys in flight at once (the engine queues its own changes too); default 8. */
  concurrency?: number;
}

/**
 * Destroys the sessions whose expiration has passed, one sweeper across replicas (a
 * transaction-level advisory lock tried at each sweep, as the event logs are pruned): the same path
 * as destroy_kasm — `stopping` (only while still expired: a keepalive since the listing saves it),
 * a start under way here cancelled, the container removed, `stopped` with EXPIRED_REASON. A removal
 * the engine refuses leaves the session `stopping`, which the reconciler finishes later.
 */
export class Sweeper {
  private readonly upkeep;
  private readonly sessions;

  constructor(
    db: Kysely<WorkspaceDatabase>,
    private readonly engine: SessionEngine,
    private readonly lifecycle: Pick<SessionLifecycle, 'cancelStart'>,
    private readonly log: FastifyBaseLogger,
    private readonly settings: SweeperSettings = {},
  ) {
    this.upkeep = createUpkeepRepository(db);
    this.sessions = createSessionsRepository(db);
  }

  /** One sweep; null when another replica is sweeping right now. */
  run(): Promise<SweepReport | null> {
    return this.upkeep.underLock('sweep', () => this.sweep());
  }

  private async sweep(): Promise<SweepReport> {
    const report: SweepReport = { destroyed: [], failed: [] };
    const expired = await this.upkeep.listExpired(this.settings.batch ?? 200);
    const queue = [...expired];
    const worker = async () => {
      for (let next = queue.shift(); next; next = queue.shift()) {
        const outcome = await this.destroy(next.id);
        if (outcome) report[outcome].push(next.id);
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.settings.concurrency ?? 8, queue.length) }, worker));
    if (report.destroyed.length || report.failed.length) this.log.info(report, 'expired sessions swept');
    return report;
  }

  /** destroy_kasm's path for one expired session; undefined when it was no longer expired (or over). */
  private async destroy(id: string): Promise<keyof SweepReport | undefined> {
    const stopping = await this.upkeep.beginExpiredStop(id);
    if (!stopping) return undefined;
    this.lifecycle.cancelStart(id);
    if (stopping.container_id) {
      try {
        await this.engine.remove(stopping.container_id);
      } catch (error) {
        this.log.warn(
          { err: error, sessionId: id, containerId: stopping.container_id },
          'an expired session\u2019s container could not be removed',
        );
        return 'failed';
      }
    }
    await this.sessions.markStopped(id, EXPIRED_REASON);
    return 'destroyed';
  }
}
