import { costOfRequests, withStatementMeter } from '@platform/db/testing';
import { openForTheseTests } from '@platform/testing';
import { sql } from 'kysely';
import { buildTestApp } from './support/app';

/**
 * get_users (a page of 100 users with their groups and the total, authenticated by an API key in the
 * headers) is a read: over 200 requests it sends at most 2 statements per request (the key, the
 * page) and writes no row: the key check stamps nothing.
 *
 * How it is counted: see `statementMeter` (@platform/db/testing): statements at the driver, rows
 * written from PostgreSQL's pg_stat_user_tables.
 */
describe('get_users: statements and writes', () => {
  const REQUESTS = 200;
  const metered = openForTheseTests(() => buildTestApp().then(withStatementMeter), 60_000);

  beforeAll(async () => {
    const { db } = metered().database;
    const users = await db
      .insertInto('users')
      .values(Array.from({ length: 150 }, (_, i) => ({ username: `user${i}` })))
      .returning('id')
      .execute();
    const [group] = await db
      .insertInto('groups')
      .values({ name: 'Readers', priority: 10 })
      .returning('id')
      .execute();
    await db
      .insertInto('user_groups')
      .values(users.map((u) => ({ user_id: u.id, group_id: group.id })))
      .execute();
    await sql`analyze`.execute(db);
  }, 60_000);

  test(`${REQUESTS} pages of get_users: at most 2 statements each, no row written`, async () => {
    const { app, admin, meter } = metered();
    const { writtenBefore, perRequest, written } = await costOfRequests(meter, REQUESTS, async (i) => {
      const response = await app.inject({
        method: 'POST',
        url: '/api/public/get_users',
        headers: { 'api-key': admin.api_key, 'api-key-secret': admin.api_key_secret },
        payload: { page: 1 + (i % 2), page_size: 100 },
      });
      expect(response.statusCode).toBe(200);
      const body = response.json() as { users: { groups: unknown[] }[]; total: number };
      expect(body.total).toBe(150);
      expect(body.users).toHaveLength(i % 2 ? 50 : 100);
      expect(body.users[0].groups).toEqual([
        { name: 'Readers', group_id: expect.stringMatching(/^[0-9a-f]{32}$/) },
      ]);
    });
    // The seed's 150 users and their memberships are seen: the reading counts writes.
    expect(writtenBefore).toBeGreaterThanOrEqual(300);

    expect({ perRequest, written }).toEqual({ perRequest: expect.any(Number), written: 0 });
    expect(perRequest).toBeLessThanOrEqual(2);
  }, 120_000);
});
