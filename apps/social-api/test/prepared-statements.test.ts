import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { openDatabase, type Database } from '@platform/db';
import { buildApp } from '../src/app';
import type { SocialDatabase } from '../src/db/schema';
import { buildTestApp, type TestApp, type TestUser } from './support/app';

/**
 * GET /api/posts, an authenticated page (the token check, then the page), answered many times by
 * the real app over a pool of one connection: PostgreSQL parses each statement a request sends
 * once on that connection, not once per request. Told by PostgreSQL itself: pg_prepared_statements
 * lists the statements prepared in that session, with how many times each ran.
 */
describe('GET /api/posts: its statements prepared once per connection', () => {
  const REQUESTS = 30;
  let t: TestApp;
  let user: TestUser;
  let one: Database<SocialDatabase>;
  let app: FastifyInstance;
  const ran: string[] = [];

  beforeAll(async () => {
    t = await buildTestApp();
    user = await t.register();
    for (const text of ['first', 'second', 'third'])
      expect(
        (await t.as(user.token, { method: 'POST', url: '/api/posts', payload: { text } })).statusCode,
      ).toBe(201);
    // Enough posts and users that a generic plan's guess matters: with `LIMIT $1` unknown, PostgreSQL
    // costs a walk of a tenth of the table, here far above a custom plan's 25 rows.
    await sql`insert into posts (user_id, text, timestamp)
      select ${user.id}, 'filler ' || i, now() - interval '1 day' - i * interval '1 minute'
      from generate_series(1, 20000) i`.execute(t.database.db);
    await sql`insert into users (username, email)
      select 'filler' || i, 'filler' || i || '@example.com' from generate_series(1, 20000) i`.execute(
      t.database.db,
    );
    await sql`analyze posts; analyze users`.execute(t.database.db);
    // The same app over the same schema and clock, on a pool of one connection: every statement of
    // every request runs on it, and so does the look at pg_prepared_statements.
    one = await openDatabase<SocialDatabase>(
      { ...t.config.database, poolMax: 1 },
      { onQuery: (event) => event.level === 'query' && ran.push(event.query.sql) },
    );
    app = await buildApp(t.config, { database: one, clock: t.clock.now });
    await app.ready();
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await one?.close();
    await t?.close();
  });

  test(`${REQUESTS} requests: each statement of a request prepared once, run ${REQUESTS} times`, async () => {
    ran.length = 0;
    for (let i = 0; i < REQUESTS; i++) {
      const response = await app.inject({
        method: 'GET',
        url: '/api/posts',
        headers: { authorization: `Bearer ${user.token}` },
      });
      expect(response.statusCode).toBe(200);
      expect(response.json().data).toHaveLength(25);
    }
    // What every request sent: the statements run once per request.
    const perRequest = [...new Set(ran)].filter((text) => ran.filter((r) => r === text).length === REQUESTS);
    expect(perRequest.length).toBeGreaterThanOrEqual(2);
    const { rows } = await sql<{ statement: string; runs: number; custom: number }>`
      select statement, (generic_plans + custom_plans)::int as runs, custom_plans::int as custom
      from pg_prepared_statements where not from_sql`.execute(one.db);
    for (const text of perRequest)
      expect({ text, runs: rows.filter((row) => row.statement === text).map((row) => row.runs) }).toEqual({
        text,
        runs: [REQUESTS],
      });
    // And planned once: PostgreSQL plans a named statement for its values five times, then keeps its
    // generic plan when that is estimated no costlier (the page's walk has a constant limit for
    // that: see the posts repository's `firstOfKeys`). A `LIMIT $1` walk is planned on every run.
    for (const text of perRequest)
      expect({ text, custom: rows.find((row) => row.statement === text)?.custom }).toEqual({
        text,
        custom: 5,
      });
  });

  test('GET /api/users: its page kept on one generic plan after five custom ones', async () => {
    ran.length = 0;
    for (let i = 0; i < REQUESTS; i++)
      expect(
        (
          await app.inject({
            method: 'GET',
            url: '/api/users',
            headers: { authorization: `Bearer ${user.token}` },
          })
        ).statusCode,
      ).toBe(200);
    const page = [...new Set(ran)].find((text) => /from user_buckets/i.test(text));
    expect(page).toBeDefined();
    const { rows } = await sql<{ generic: number; custom: number }>`
      select generic_plans::int as generic, custom_plans::int as custom
      from pg_prepared_statements where statement = ${page}`.execute(one.db);
    expect(rows).toEqual([{ generic: REQUESTS - 5, custom: 5 }]);
  });

  test("the feed's pages kept on one generic plan after five custom ones, by offset and after a cursor", async () => {
    for (const url of ['/api/feed', `/api/feed?after=${encodeURIComponent(new Date().toISOString())}`]) {
      ran.length = 0;
      for (let i = 0; i < REQUESTS; i++)
        expect(
          (await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${user.token}` } }))
            .statusCode,
        ).toBe(200);
      const page = [...new Set(ran)].find((text) => /from feed_weeks/i.test(text));
      expect(page).toBeDefined();
      const { rows } = await sql<{ generic: number; custom: number }>`
        select generic_plans::int as generic, custom_plans::int as custom
        from pg_prepared_statements where statement = ${page}`.execute(one.db);
      expect({ url, plans: rows }).toEqual({ url, plans: [{ generic: REQUESTS - 5, custom: 5 }] });
    }
  });

  test("the follow lists' pages are planned for each request's values: sent unnamed, never kept", async () => {
    ran.length = 0;
    for (const url of [`/api/users/${user.id}/followers`, `/api/users/${user.id}/following`])
      for (let i = 0; i < 6; i++)
        expect(
          (await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${user.token}` } }))
            .statusCode,
        ).toBe(200);
    const pages = [...new Set(ran)].filter((text) => /\blimit \$1\b/i.test(text));
    expect(pages).toHaveLength(2);
    const { rows } = await sql<{ statement: string }>`
      select statement from pg_prepared_statements where not from_sql`.execute(one.db);
    for (const text of pages) expect(rows.filter((row) => row.statement === text)).toEqual([]);
    // The token check of the same requests is kept (prepared once, run 12 times).
    expect(rows.length).toBeGreaterThan(0);
  });
});
