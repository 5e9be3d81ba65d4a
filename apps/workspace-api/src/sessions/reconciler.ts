import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { WorkspaceDatabase } from '../db/schema';
import { parseId } from '../wire/kasm';
import type { SessionContainer, SessionEngine } from './engine';
import { createSessionsRepository } from './repository';
import { createUpkeepRepository } from './upkeep-repository';

/** Why the reconciler ended a session, in the words users read (`operational_message`, `reason`). */
export const VANISHED_REASON = 'The workspace\u2019s container disappeared';
export const INTERRUPTED_REASON =
  'The workspace start did not finish (the service stopped, or lost its database, while it started); request it again';

/** What one reconciliation did (the session ids in the database form). */
export interface ReconcileReport {
  /** Containers removed because no live session is theirs. */
  orphansRemoved: string[];
  /** Running sessions whose container vanished or exited: now stopped, with the reason. */
  stopped: string[];
  /** Sessions requested or starting for longer than a start may take: now failed ("interrupted"). */
  interrupted: string[];
  /** Stopping sessions whose stop was finished here (their container removed, then stopped). */
  finished: string[];
}

export interface ReconcilerSettings {
  /** How long a start may take (SESSIONS_START_TIMEOUT_MS). */
  startTimeoutMs: number;
  /**
   * How much longer than that a session may stay requested or starting before it counts as
   * interrupted: the start's own deadline is counted from a little after the row was made (default
   * the start timeout, at most 30 s).
   */
  graceMs?: number;
}

/**
 * Makes the engine and PostgreSQL agree, on start-up and periodically (one replica per engine at a
 * time: an advisory lock named after the engine's provider and host). The rules:
 *
 * - A labelled container of this engine whose session is not live (no row, or stopped/failed) is
 *   removed: what a start that lost a race, a crash or a failed removal left behind.
 * - A running session whose container is missing becomes `stopped` with the reason
 *   VANISHED_REASON; one whose container exited becomes `stopped` with the engine's reason (the
 *   exit code and the last line of output), and the exited container is removed. `stopped`, not
 *   `failed`: the session did run, and `failed` is kept for sessions that never came up.
 * - A session `requested` or `starting` for longer than the start timeout (plus a grace) becomes
 *   `failed` with INTERRUPTED_REASON (the process running its start died, or its start met an
 *   error it could not write down, e.g. no database connection: a live start fails itself at the timeout), and the container it may have made is removed.
 * - A `stopping` session (a destroy that failed or whose process died) has its container removed
 *   and becomes `stopped` (a destroy still in flight elsewhere removes the same container: either
 *   removal is fine).
 *
 * Every move is a compare-and-set on what was seen, so a reconciler racing a start, a destroy or
 * another replica never brings a session back. Each direction reads in the order that keeps it
 * safe: containers before rows for orphans (a container is made only after its row is committed,
 * so a container seen has its row seen), rows before containers for vanished ones (a container
 * that a row seen as running names existed before the row was read).
 *
 * Rows are this engine's (its provider and host, as the rows record them): replicas on other
 * hosts reconcile theirs. Rows of an engine no replica serves any more are left as they are.
 */
export class Reconciler {
  private readonly upkeep;
  private readonly sessions;

  constructor(
    db: Kysely<WorkspaceDatabase>,
    private readonly engine: SessionEngine,
    private readonly settings: ReconcilerSettings,
    private readonly log: FastifyBaseLogger,
  ) {
    this.upkeep = createUpkeepRepository(db);
    this.sessions = createSessionsRepository(db);
  }

  /** How long a session may be requested or starting before it counts as interrupted, in seconds. */
  private get staleSeconds(): number {
    const { startTimeoutMs, graceMs } = this.settings;
    return (startTimeoutMs + (graceMs ?? Math.min(startTimeoutMs, 30_000))) / 1000;
  }

  /** One reconciliation; null when another replica is reconciling this engine right now. */
  run(): Promise<ReconcileReport | null> {
    const { provider, hostname } = this.engine;
    return this.upkeep.underLock(`reconcile ${provider} ${hostname}`, () => this.reconcile());
  }

  private async reconcile(): Promise<ReconcileReport> {
    const report: ReconcileReport = { orphansRemoved: [], stopped: [], interrupted: [], finished: [] };

    // Containers first, then whether their sessions are live.
    const containers = await this.engine.list();
    const sessionOf = (c: SessionContainer) => parseId(c.sessionId);
    const live = await this.upkeep.liveAmong(
      containers.map(sessionOf).filter((id): id is string => id !== undefined),
    );
    await Promise.all(
      containers
        .filter((c) => {
          const id = sessionOf(c);
          return id === undefined || !live.has(id);
        })
        .map(async (c) => {
          if (await this.remove(c.containerId)) report.orphansRemoved.push(c.containerId);
        }),
    );

    // Rows first, then what the engine holds now.
    const rows = await this.upkeep.liveOnEngine(
      this.engine.provider,
      this.engine.hostname,
      this.staleSeconds,
    );
    if (!rows.length) return report;
    const now = await this.engine.list();
    const byId = new Map(now.map((c) => [c.containerId, c]));
    const bySession = new Map<string, string[]>();
    for (const c of now) {
      const id = sessionOf(c);
      if (id !== undefined) bySession.set(id, [...(bySession.get(id) ?? []), c.containerId]);
    }
    /** Every container of a session: the one its row records and any labelled with it. */
    const containersOf = (row: { id: string; container_id: string | null }) => [
      ...new Set([...(row.container_id ? [row.container_id] : []), ...(bySession.get(row.id) ?? [])]),
    ];

    for (const row of rows) {
      switch (row.state) {
        case 'running': {
          const containerId = row.container_id!; // a running row has one (a table constraint)
          const seen = byId.get(containerId);
          if (seen?.running) break;
          // Not listed, or listed as not running: the engine's own word on it.
          const status = await this.engine.status(containerId);
          if (status.state === 'running' || status.state === 'created') break;
          const reason = status.state === 'exited' ? status.reason : VANISHED_REASON;
          if (await this.upkeep.stopGone(row.id, containerId, reason)) {
            report.stopped.push(row.id);
            this.log.warn(
              { sessionId: row.id, containerId, reason },
              'session stopped: its container is gone',
            );
            if (status.state === 'exited') await this.remove(containerId);
          }
          break;
        }
        case 'requested':
        case 'starting': {
          if (!row.stale) break;
          const moved = await this.upkeep.interrupt(row.id, row.state, this.staleSeconds, INTERRUPTED_REASON);
          if (!moved) break;
          report.interrupted.push(row.id);
          this.log.warn({ sessionId: row.id, was: row.state }, 'session start interrupted');
          for (const id of containersOf({ id: row.id, container_id: moved.container_id }))
            await this.remove(id);
          break;
        }
        case 'stopping': {
          const removed = await Promise.all(containersOf(row).map((id) => this.remove(id)));
          if (removed.every(Boolean) && (await this.sessions.markStopped(row.id)))
            report.finished.push(row.id);
          break;
        }
        default:
          break;
      }
    }
    return report;
  }

  /** Removes a container; false (logged) when the engine failed to. */
  private async remove(containerId: string): Promise<boolean> {
    try {
      await this.engine.remove(containerId);
      return true;
    } catch (error) {
      this.log.warn({ err: error, containerId }, 'reconciler: a session container could not be removed');
      return false;
    }
  }
}
