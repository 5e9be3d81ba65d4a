/**
 * Password hashing in workspace-api (#11, #12): argon2id at OWASP's parameters unless configured,
 * a bounded number of hashes at once, and a full queue answered as a Kasm-style 503 (never a 500)
 * that stores nothing.
 */
import { buildTestApp, type TestApp } from './support/app';

describe('password hashing of create_user', () => {
  let t: TestApp;
  afterEach(() => t?.close());

  test('a full hashing queue is a 503 in the Kasm format and the refused users are not created', async () => {
    // Hashes slow enough (32 MiB) that the requests meet at the gate: one at a time, one waiting.
    t = await buildTestApp({ ARGON2_MEMORY_KIB: '32768', ARGON2_CONCURRENCY: '1', ARGON2_QUEUE: '1' });
    const names = Array.from({ length: 10 }, (_, i) => `storm-user-${i}`);
    const answers = await Promise.all(
      names.map((username) => t.call('create_user', { target_user: { username, password: 'Secret-123!' } })),
    );
    const statuses = answers.map((r) => r.statusCode);
    expect(statuses.every((s) => s === 200 || s === 503)).toBe(true);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(2);
    const refused = answers.filter((r) => r.statusCode === 503);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    for (const r of refused) {
      expect(r.headers['content-type']).toMatch(/^application\/json/);
      expect(r.json()).toEqual({ error_message: expect.any(String) });
      expect(r.headers['retry-after']).toBeDefined();
    }
    const created = await t.database.db
      .selectFrom('users')
      .select('username')
      .where('username', 'in', names)
      .execute();
    expect(created.length).toBe(statuses.filter((s) => s === 200).length);
    // The gate is free again.
    const after = await t.call('create_user', {
      target_user: { username: 'after-storm', password: 'Secret-123!' },
    });
    expect(after.statusCode).toBe(200);
  });

  test("without settings the stored hash uses OWASP's row (19 MiB, 2 passes, 1 lane)", async () => {
    t = await buildTestApp({ ARGON2_MEMORY_KIB: '19456', ARGON2_TIME_COST: '2' });
    const r = await t.call('create_user', { target_user: { username: 'owasp', password: 'Secret-123!' } });
    expect(r.statusCode).toBe(200);
    const row = await t.database.db
      .selectFrom('users')
      .select('password_hash')
      .where('username', '=', 'owasp')
      .executeTakeFirstOrThrow();
    expect(row.password_hash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
  });
});
