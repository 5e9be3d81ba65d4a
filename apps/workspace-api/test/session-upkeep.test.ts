import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { openForTheseTests } from '@platform/testing';
import { INTERRUPTED_REASON, Reconciler, VANISHED_REASON } from '../src/sessions/reconciler';
import { EXPIRED_REASON, Sweeper } from '../src/sessions/sweeper';
import { createUpkeepRepository } from '../src/sessions/upkeep-repository';
import { buildTestApp } from './support/app';
import { sessionKit as kit } from './support/sessions';

const hex = () => randomBytes(16).toString('hex');

describe('the reconciler (in-process engine)', () => {
  // The periodic runs are out of the way: each test runs the reconciler itself.
  const t = openForTheseTests(
    () =>
      buildTestApp({
        SESSIONS_ENGINE: 'memory',
        SESSIONS_RECONCILE_MS: '86400000',
        SESSIONS_SWEEP_MS: '86400000',
      }),
    60_000,
  );
  const { ok, engine, running, rowOf, age, rowIn } = kit(t);
  const reconcile = async () => (await t().app.sessionUpkeep!.reconcile())!;

  test('a labelled container without a live session is removed; a running session’s is kept', async () => {
    const session = await running();
    // No row at all (a start whose row is gone), and a row that is over (a removal that failed).
    const { containerId: stray } = await engine().start({
      sessionId: hex(),
      userId: hex(),
      image: 'kasmweb/test:1',
      env: {},
      capAdd: [],
      webPort: 6901,
    });
    const over = await running();
    await t()
      .database.db.updateTable('sessions')
      .set({ state: 'stopped', stopped: sql`now()` })
      .where('id', '=', over.id)
      .execute();

    const report = await reconcile();
    expect(report.orphansRemoved.sort()).toEqual([stray, over.containerId].sort());
    expect(engine().containers.has(stray)).toBe(false);
    expect(engine().containers.has(over.containerId)).toBe(false);
    expect(engine().containers.has(session.containerId)).toBe(true);
    expect((await rowOf(session.id)).state).toBe('running');
    // The ended row stays ended.
    expect((await rowOf(over.id)).state).toBe('stopped');
  });

  test('a running session whose container vanished becomes stopped, saying so', async () => {
    const session = await running();
    engine().loseContainer(session.containerId);
    const report = await reconcile();
    expect(report.stopped).toContain(session.id);
    const row = await rowOf(session.id);
    expect(row).toMatchObject({ state: 'stopped', reason: VANISHED_REASON, connect_token_hash: null });
    expect(row.stopped).toBeInstanceOf(Date);
    const status = await ok('get_kasm_status', { user_id: session.user, kasm_id: session.kasm_id });
    expect(status).toMatchObject({ operational_status: 'stopped', operational_message: VANISHED_REASON });
  });

  test('a running session whose container exited becomes stopped with the engine’s reason; the container goes', async () => {
    const session = await running();
    engine().stopContainer(session.containerId, 'The container exited with code 3: boom');
    await reconcile();
    expect(await rowOf(session.id)).toMatchObject({
      state: 'stopped',
      reason: 'The container exited with code 3: boom',
    });
    expect(engine().containers.has(session.containerId)).toBe(false);
  });

  test('a session requested or starting for longer than a start may take fails as interrupted, its container removed', async () => {
    const staleRequested = await rowIn('requested');
    const { containerId } = await engine().start({
      sessionId: hex(),
      userId: hex(),
      image: 'kasmweb/test:1',
      env: {},
      capAdd: [],
      webPort: 6901,
    });
    const staleStarting = await rowIn('starting', containerId);
    const fresh = await rowIn('starting');
    const timeout = t().config.sessions.startTimeoutMs / 1000;
    await age(staleRequested, timeout + 31);
    await age(staleStarting, timeout + 31);
    await age(fresh, timeout - 5); // within its start's time (plus the grace): left alone

    const report = await reconcile();
    expect(report.interrupted.sort()).toEqual([staleRequested, staleStarting].sort());
    for (const id of [staleRequested, staleStarting])
      expect(await rowOf(id)).toMatchObject({ state: 'failed', reason: INTERRUPTED_REASON });
    expect(engine().containers.has(containerId)).toBe(false);
    expect((await rowOf(fresh)).state).toBe('starting');
  });

  test('a stopping session (a destroy that failed) has its container removed and becomes stopped', async () => {
    const session = await running();
    engine().failNextRemove();
    const destroy = await t().call('destroy_kasm', { user_id: session.user, kasm_id: session.kasm_id });
    expect(destroy.statusCode).toBe(503);
    expect((await rowOf(session.id)).state).toBe('stopping');
    const report = await reconcile();
    expect(report.finished).toEqual([session.id]);
    expect((await rowOf(session.id)).state).toBe('stopped');
    expect(engine().containers.has(session.containerId)).toBe(false);
  });

  test('never brings a session back: a destroy between its look at the engine and its move wins', async () => {
    const session = await running();
    engine().loseContainer(session.containerId);
    const status = engine().status.bind(engine());
    const spy = jest.spyOn(engine(), 'status').mockImplementation(async (id) => {
      // The owner destroys the session while the reconciler asks the engine.
      await ok('destroy_kasm', { user_id: session.user, kasm_id: session.kasm_id });
      return status(id);
    });
    try {
      const report = await reconcile();
      expect(report.stopped).not.toContain(session.id);
    } finally {
      spy.mockRestore();
    }
    // Stopped by the destroy (no reason), not by the reconciler.
    expect(await rowOf(session.id)).toMatchObject({ state: 'stopped', reason: null });

    // And the moves themselves never take an ended session anywhere.
    const upkeep = createUpkeepRepository(t().database.db);
    expect(await upkeep.stopGone(session.id, session.containerId, 'x')).toBe(false);
    expect(await upkeep.interrupt(session.id, 'starting', 0, 'x')).toBeUndefined();
    expect(await upkeep.beginExpiredStop(session.id)).toBeUndefined();
    expect(await rowOf(session.id)).toMatchObject({ state: 'stopped', reason: null });
  });

  test('rows of another engine (another host) are not this reconciler’s', async () => {
    const session = await running();
    await t()
      .database.db.updateTable('sessions')
      .set({ hostname: 'another-host' })
      .where('id', '=', session.id)
      .execute();
    engine().loseContainer(session.containerId);
    await reconcile();
    expect((await rowOf(session.id)).state).toBe('running');
  });

  test('one reconciler per engine at a time across replicas (the advisory lock)', async () => {
    const other = new Reconciler(
      t().database.db,
      engine(),
      { startTimeoutMs: t().config.sessions.startTimeoutMs },
      t().app.log,
    );
    const list = engine().list.bind(engine());
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const spy = jest.spyOn(engine(), 'list').mockImplementationOnce(async () => {
      await held;
      return list();
    });
    try {
      const first = t().app.sessionUpkeep!.reconcile();
      await new Promise((resolve) => setTimeout(resolve, 100)); // the first holds the lock, waiting on the engine
      expect(await other.run()).toBeNull();
      release();
      expect(await first).not.toBeNull();
      expect(await other.run()).not.toBeNull();
    } finally {
      release();
      spy.mockRestore();
    }
  });
});

describe('the expiry sweeper (in-process engine)', () => {
  const t = openForTheseTests(
    () =>
      buildTestApp({
        SESSIONS_ENGINE: 'memory',
        SESSIONS_RECONCILE_MS: '86400000',
        SESSIONS_SWEEP_MS: '86400000',
      }),
    60_000,
  );
  const { ok, engine, running, rowOf, expire } = kit(t);
  const sweep = async () => (await t().app.sessionUpkeep!.sweep())!;

  test('destroys expired sessions (stopping, container removed, stopped) and keeps the others', async () => {
    const expired = await running();
    const kept = await running();
    await expire(expired.id);
    const report = await sweep();
    expect(report).toEqual({ destroyed: [expired.id], failed: [] });
    expect(await rowOf(expired.id)).toMatchObject({ state: 'stopped', reason: EXPIRED_REASON });
    expect(engine().containers.has(expired.containerId)).toBe(false);
    expect((await rowOf(kept.id)).state).toBe('running');
    expect(engine().containers.has(kept.containerId)).toBe(true);
    // The owner sees it over.
    expect(await ok('get_kasm_status', { user_id: expired.user, kasm_id: expired.kasm_id })).toMatchObject({
      operational_status: 'stopped',
    });
  });

  test('a keepalive after the expiration passed but before the sweep saves the session', async () => {
    const session = await running();
    await expire(session.id);
    await ok('keepalive', { user_id: session.user, kasm_id: session.kasm_id });
    expect((await sweep()).destroyed).not.toContain(session.id);
    expect((await rowOf(session.id)).state).toBe('running');
  });

  test('a removal the engine refuses leaves the session stopping, for the reconciler to finish', async () => {
    const session = await running();
    await expire(session.id);
    engine().failNextRemove();
    expect(await sweep()).toEqual({ destroyed: [], failed: [session.id] });
    expect((await rowOf(session.id)).state).toBe('stopping');
    expect((await t().app.sessionUpkeep!.reconcile())!.finished).toEqual([session.id]);
    expect((await rowOf(session.id)).state).toBe('stopped');
  });

  test('two sweepers at once (two replicas): each expired session destroyed once', async () => {
    const sessions = await Promise.all(Array.from({ length: 6 }, () => running()));
    for (const s of sessions) await expire(s.id);
    const remove = engine().remove.bind(engine());
    const removed: string[] = [];
    const spy = jest.spyOn(engine(), 'remove').mockImplementation(async (id) => {
      removed.push(id);
      await new Promise((resolve) => setTimeout(resolve, 50)); // slow enough for the sweeps to overlap
      return remove(id);
    });
    try {
      const replicas = [0, 1].map(
        () => new Sweeper(t().database.db, engine(), t().app.sessions, t().app.log),
      );
      const reports = await Promise.all(replicas.map((s) => s.run()));
      // One held the lock, the other stood aside.
      expect(reports.filter((r) => r === null)).toHaveLength(1);
      const done = reports.find((r) => r !== null)!;
      expect(done.destroyed.sort()).toEqual(sessions.map((s) => s.id).sort());
      // And after it, nothing is left to sweep.
      expect(await replicas[1].run()).toEqual({ destroyed: [], failed: [] });
    } finally {
      spy.mockRestore();
    }
    expect(removed.sort()).toEqual(sessions.map((s) => s.containerId).sort());
    for (const s of sessions) expect((await rowOf(s.id)).state).toBe('stopped');
  });

  test('without the lock (two sweeps racing on the rows) the moves still destroy each session once', async () => {
    const sessions = await Promise.all(Array.from({ length: 4 }, () => running()));
    for (const s of sessions) await expire(s.id);
    const remove = jest.spyOn(engine(), 'remove');
    try {
      // Both sweepers' bodies at once, each past the lock (as if each held it).
      const bodies = [0, 1].map(() => {
        const sweeper = new Sweeper(t().database.db, engine(), t().app.sessions, t().app.log);
        (sweeper as unknown as { upkeep: { underLock: unknown } }).upkeep.underLock = (
          _name: string,
          work: () => Promise<unknown>,
        ) => work();
        return sweeper;
      });
      const reports = await Promise.all(bodies.map((s) => s.run()));
      const destroyed = reports.flatMap((r) => r!.destroyed);
      expect(destroyed.sort()).toEqual(sessions.map((s) => s.id).sort());
      expect(remove.mock.calls.map(([id]) => id).sort()).toEqual(sessions.map((s) => s.containerId).sort());
    } finally {
      remove.mockRestore();
    }
  });

  test('the sweeper and the reconciler run on their own when the app is ready, and stop when it closes', async () => {
    const app = await buildTestApp({
      SESSIONS_ENGINE: 'memory',
      SESSIONS_RECONCILE_MS: '1000',
      SESSIONS_SWEEP_MS: '1000',
    });
    try {
      const own = kit(() => app);
      const session = await own.running();
      await own.expire(session.id);
      const until = Date.now() + 10_000;
      while ((await own.rowOf(session.id)).state !== 'stopped') {
        if (Date.now() > until) throw new Error('the sweeper did not run');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect((await own.rowOf(session.id)).reason).toBe(EXPIRED_REASON);
    } finally {
      await app.close();
    }
  });
});
