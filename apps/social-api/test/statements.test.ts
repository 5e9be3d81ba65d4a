import { CompiledQuery, sql } from 'kysely';
import { openDatabase, type Database, type DatabaseConfig } from '@platform/db';
import { testDatabase } from '@platform/db/testing';
import { buildApp } from '../src/app';
import { loadConfig, type Config } from '../src/config';
import type { SocialDatabase } from '../src/db/schema';
import { basic } from './support/app';
import { nodes, type PlanNode } from './support/plans';

/**
 * What a hot read costs the database, measured on the real app over 200 requests of each:
 * GET /api/posts, /api/feed, /api/users/<id> and /api/me run at most two statements each (the token
 * check with the caller's row, then at most one for the page with its total) and write no row.
 *
 * Statements are counted at the client (Kysely's query log of the app's own pool: every statement
 * the app sends goes through it), since the test PostgreSQL has no pg_stat_statements
 * (`shared_preload_libraries` is empty). Rows written are PostgreSQL's own statistics
 * (pg_stat_user_tables of the test schema), read once every backend of the app's pool has exited,
 * which is when a backend is sure to have reported its counts.
 *
 * The only writes allowed are the coalesced `last_seen` writes (at most one a second, and one at
 * close), which the test counts from the log and subtracts exactly.
 */

const POSTS = 2000;
const REQUESTS = 200;
const APP_NAME = `social_statements_${process.pid}`;

type TableStats = Record<string, { ins: number; upd: number; del: number }>;

describe('statements and writes of the hot reads', () => {
  const fresh = testDatabase('social');
  /** The app's pool, named so that the test can see when all of its backends are gone. */
  const appDatabase: DatabaseConfig = (() => {
    const url = new URL(fresh.config.url);
    url.searchParams.set('application_name', APP_NAME);
    return { ...fresh.config, url: url.toString() };
  })();
  let monitor: Database<SocialDatabase>;
  const config: Config = loadConfig({
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ARGON2_MEMORY_KIB: '1024',
    ARGON2_TIME_COST: '1',
  });
  config.database = appDatabase;

  /** The app over its own pool, and every statement that pool ran (with its parameters). */
  async function start() {
    const statements: CompiledQuery[] = [];
    const database = await openDatabase<SocialDatabase>(appDatabase, {
      onQuery: (event) => statements.push(event.query),
    });
    const app = await buildApp(config, { database });
    await app.ready();
    return {
      app,
      statements,
      database,
      /** Closes the app (its last `last_seen` write included), then its pool. */
      async stop() {
        await app.close();
        await database.close();
      },
    };
  }

  /** The write counts of the schema's tables once every backend of the app's pool has exited. */
  async function tableStats(): Promise<TableStats> {
    for (let i = 0; ; i++) {
      const { rows } = await sql<{ n: string }>`
        select count(*) as n from pg_stat_activity where application_name = ${APP_NAME}`.execute(monitor.db);
      if (Number(rows[0].n) === 0) break;
      if (i > 100) throw new Error('the app pool backends did not exit');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // A fresh snapshot of the statistics (the default caches them for the transaction).
    const { rows } = await monitor.db.connection().execute(async (connection) => {
      await sql`select pg_stat_clear_snapshot()`.execute(connection);
      return sql<{ relname: string; ins: string; upd: string; del: string }>`
        select relname, n_tup_ins as ins, n_tup_upd as upd, n_tup_del as del
        from pg_stat_user_tables where schemaname = ${fresh.config.schema}`.execute(connection);
    });
    return Object.fromEntries(
      rows.map((r) => [r.relname, { ins: Number(r.ins), upd: Number(r.upd), del: Number(r.del) }]),
    );
  }

  const users: Record<'reader' | 'author', { id: number; token: string }> = {} as never;

  beforeAll(async () => {
    monitor = await openDatabase<SocialDatabase>({ ...fresh.config, poolMax: 1 });
    const setup = await start();
    try {
      for (const name of ['reader', 'author'] as const) {
        const created = await setup.app.inject({
          method: 'POST',
          url: '/api/users',
          payload: { username: name, email: `${name}@example.com`, password: 'password' },
        });
        expect(created.statusCode).toBe(201);
        const login = await setup.app.inject({
          method: 'POST',
          url: '/api/tokens',
          headers: { authorization: basic(name, 'password') },
        });
        users[name] = { id: created.json().id, token: login.json().access_token };
      }
      const follow = await setup.app.inject({
        method: 'POST',
        url: `/api/me/following/${users.author.id}`,
        headers: { authorization: `Bearer ${users.reader.token}` },
      });
      expect(follow.statusCode).toBe(204);
      await sql`
        insert into posts (user_id, text, timestamp)
        select case when g % 4 = 0 then ${users.reader.id}::int else ${users.author.id}::int end, 'post ' || g,
               timestamptz '2026-01-01 00:00:00+00' + g * interval '1 minute'
        from generate_series(1, ${POSTS}) g`.execute(setup.database.db);
      await sql`vacuum analyze users, posts, followers, tokens, totals`.execute(setup.database.db);
    } finally {
      await setup.stop();
    }
  }, 60_000);

  afterAll(async () => {
    await monitor?.close();
    await fresh.cleanup();
  });

  /**
   * The `last_seen` writes among statements (the coalesced writes, not part of any request), and the
   * event listener's reads of the log (its own work, on notifications and at start: no request's).
   */
  const isLastSeenWrite = (q: CompiledQuery) =>
    /^(begin|commit)$/i.test(q.sql.trim()) ||
    /\blast_seen = greatest\b|for no key update/.test(q.sql) ||
    /^select .* from "?events"? /i.test(q.sql);

  for (const [name, url, most] of [
    ['GET /api/posts', () => '/api/posts', 2],
    ['GET /api/feed', () => '/api/feed', 2],
    ['GET /api/users/<id>', () => `/api/users/${users.author.id}`, 2],
    ['GET /api/me', () => '/api/me', 1],
  ] as const) {
    test(`${name}: at most ${most} statements per request and no row written, over ${REQUESTS} requests`, async () => {
      const before = await tableStats();
      const run = await start();
      const perRequest: number[] = [];
      let lastSeenRows = 0;
      try {
        for (let i = 0; i < REQUESTS; i++) {
          const from = run.statements.length;
          const res = await run.app.inject({
            method: 'GET',
            url: url(),
            headers: { authorization: `Bearer ${users.reader.token}` },
          });
          expect(res.statusCode).toBe(200);
          perRequest.push(run.statements.slice(from).filter((q) => !isLastSeenWrite(q)).length);
        }
      } finally {
        await run.stop();
      }
      // Each coalesced write updates the users it names (here only the reader, once per write).
      for (const q of run.statements.filter((s) => /\blast_seen = greatest\b/.test(s.sql)))
        lastSeenRows += (q.parameters[0] as number[]).length;
      const after = await tableStats();

      if (process.env.STATEMENTS_REPORT)
        console.log(name, { perRequest: [...new Set(perRequest)], lastSeenRows, written: after.users });
      expect(Math.max(...perRequest)).toBeLessThanOrEqual(most);
      const written = Object.fromEntries(
        Object.keys(after).map((table) => [
          table,
          {
            ins: after[table].ins - (before[table]?.ins ?? 0),
            upd: after[table].upd - (before[table]?.upd ?? 0),
            del: after[table].del - (before[table]?.del ?? 0),
          },
        ]),
      );
      const zero = { ins: 0, upd: 0, del: 0 };
      expect(written).toEqual({
        users: { ...zero, upd: lastSeenRows },
        posts: zero,
        post_buckets: zero,
        user_buckets: zero,
        post_weeks: zero,
        feed_weeks: zero,
        events: zero,
        followers: zero,
        tokens: zero,
        totals: zero,
        spent_oauth2_states: zero,
        service_secrets: zero,
        kysely_migration: zero,
        kysely_migration_lock: zero,
      });
      // The requests took well under REQUESTS seconds: the coalesced writes are a handful, not one a request.
      expect(lastSeenRows).toBeGreaterThanOrEqual(1); // at least the one at close
      expect(lastSeenRows).toBeLessThan(REQUESTS / 10);
    }, 60_000);
  }

  describe('the statement of a page', () => {
    let run: Awaited<ReturnType<typeof start>>;
    beforeAll(async () => {
      run = await start();
    });
    afterAll(() => run?.stop());

    /** The statements of one request but the token check, each with its EXPLAIN ANALYZE plan nodes. */
    async function plans(url: string) {
      const from = run.statements.length;
      const res = await run.app.inject({
        method: 'GET',
        url,
        headers: { authorization: `Bearer ${users.reader.token}` },
      });
      expect(res.statusCode).toBe(200);
      const ran = run.statements
        .slice(from)
        .filter((q) => !isLastSeenWrite(q) && !/from "tokens"/.test(q.sql));
      const out: PlanNode[][] = [];
      for (const q of ran) {
        const result = await run.database.db.executeQuery<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(
          CompiledQuery.raw(`explain (analyze, format json) ${q.sql}`, [...q.parameters]),
        );
        out.push(nodes(result.rows[0]['QUERY PLAN'][0].Plan));
      }
      return { body: res.json(), plans: out };
    }
    /** Full scans of posts (a scan of the one-row totals or of two users is fine). */
    const postScans = (plan: PlanNode[]) =>
      plan.filter((n) => n['Node Type'] === 'Seq Scan' && n['Relation Name'] === 'posts');
    const postsRead = (plan: PlanNode[]) =>
      plan
        .filter((n) => n['Relation Name'] === 'posts')
        .reduce((sum, n) => sum + (n['Actual Rows'] ?? 0) * (n['Actual Loops'] ?? 1), 0);

    test('GET /api/posts: one statement for page and total; it reads the page, never the whole table', async () => {
      const { body, plans: ran } = await plans('/api/posts');
      expect(ran).toHaveLength(1);
      expect(body.pagination).toEqual({ limit: 25, offset: 0, count: 25, total: POSTS });
      expect(postScans(ran[0])).toEqual([]);
      // The page's keys from the index, then each of its posts by id: twice the page, no more.
      expect(postsRead(ran[0])).toBeLessThanOrEqual(2 * 25);
    });

    test("an after= page's offset is a range count of posts_timestamp_idx: it reads only the posts newer than the cursor", async () => {
      // The 100th newest post: 99 newer, so 100 at or before the cursor.
      const first = await plans('/api/posts?offset=75');
      const cursor = first.body.data[24].timestamp as string;
      const { body, plans: ran } = await plans(`/api/posts?after=${encodeURIComponent(cursor)}`);
      expect(ran).toHaveLength(1);
      expect(body.pagination).toEqual({ limit: 25, offset: 100, count: 25, total: POSTS });
      const plan = ran[0];
      expect(postScans(plan)).toEqual([]);
      // The count's scan (index-only once the visibility map allows it) stops at the cursor.
      const counted = plan.filter(
        (n) => n['Index Name'] === 'posts_timestamp_idx' && n['Actual Rows'] === 100,
      );
      expect(counted.map((n) => n['Node Type'])).toEqual([expect.stringMatching(/^Index (Only )?Scan$/)]);
      // The count (100) and the page (25 keys, then those 25 posts): far from the 2000 posts of the table.
      expect(postsRead(plan)).toBeLessThanOrEqual(100 + 2 * 25);
    });

    test('GET /api/users/<id>/posts: one statement after the token check (no lookup of the user first), yet a 404 for no such user whatever the query', async () => {
      const { body, plans: ran } = await plans(`/api/users/${users.author.id}/posts`);
      expect(ran).toHaveLength(1);
      expect(body.pagination.total).toBe((POSTS * 3) / 4);
      const as = (url: string) =>
        run.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${users.reader.token}` } });
      for (const query of [
        '',
        '?offset=-1',
        '?limit=0',
        '?offset=5000',
        '?offset=1&after=2026-01-01T00:00:00Z',
      ])
        expect({ query, status: (await as(`/api/users/987654/posts${query}`)).statusCode }).toEqual({
          query,
          status: 404,
        });
      for (const query of ['?offset=-1', '?limit=0', '?offset=5000', '?offset=1&after=2026-01-01T00:00:00Z'])
        expect({
          query,
          status: (await as(`/api/users/${users.author.id}/posts${query}`)).statusCode,
        }).toEqual({
          query,
          status: 400,
        });
    });

    test("GET /api/feed: the total comes from the feed's counts per week, not from its posts", async () => {
      const { body, plans: ran } = await plans('/api/feed');
      expect(ran).toHaveLength(1);
      expect(body.pagination.total).toBe(POSTS);
      // At most a page from each of the two authors' index entries, then the page's 25 posts by id.
      expect(postsRead(ran[0])).toBeLessThanOrEqual(2 * 25 + 25);
    });
  });
});
