import type { FastifyInstance } from 'fastify';
import { CompiledQuery, sql } from 'kysely';
import { openDatabase, type Database } from '@platform/db';
import { testDatabase } from '@platform/db/testing';
import { buildApp } from '../src/app';
import { loadConfig } from '../src/config';
import type { SocialDatabase } from '../src/db/schema';
import { registerThrough } from './support/app';
import { nodes, type PlanNode } from './support/plans';

/**
 * What a page costs the database. The feed is one statement whatever the number of people
 * followed (never one per followed user, nor one per post author), and the pages of one author's
 * posts and of the follower lists are read through the indexes of the migration once the tables
 * are big enough for that to matter and the planner has statistics.
 */

const FANS = 20_000; // generated users, each following 10 others (enough that scanning users costs more than index probes)
const POSTERS = 2000; // the first fans, with 10 posts each
const PROLIFIC_POSTS = 3000;

describe('feed and listing cost', () => {
  let app: FastifyInstance;
  let database: Database<SocialDatabase>;
  let cleanup: () => Promise<void>;
  /** Every statement the app ran, while `recording`. */
  const statements: CompiledQuery[] = [];
  let recording = false;
  const viewers: Record<'none' | 'one' | 'many', { id: number; token: string }> = {} as never;
  let fanIds: number[];
  let prolificId: number;

  /** The statements one request runs, and its response. */
  async function measure(token: string, url: string) {
    // The coalesced last_seen write (a timer, once a second) is not the request's: written before,
    // and left out should its timer fire during the request.
    await app.lastSeen.flush();
    statements.length = 0;
    recording = true;
    try {
      const res = await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } });
      expect(res.statusCode).toBe(200);
      return { res, statements: statements.filter((q) => !isLastSeenWrite(q.sql)) };
    } finally {
      recording = false;
    }
  }

  /** A statement of the batched last_seen write (its transaction, its row locks, its update). */
  const isLastSeenWrite = (text: string) =>
    /^(begin|commit|rollback)\b/i.test(text.trim()) ||
    /for no key update/i.test(text) ||
    /update users set last_seen/i.test(text);

  /** EXPLAIN ANALYZE of the statement a request ran to read its page (the one with a LIMIT). */
  async function pagePlan(token: string, url: string): Promise<PlanNode[]> {
    const { statements: ran } = await measure(token, url);
    const page = ran.filter((q) => /\blimit\b/i.test(q.sql));
    expect(page).toHaveLength(1);
    return explain(page[0]);
  }

  /** EXPLAIN ANALYZE of a statement the app ran, with its parameters. */
  async function explain(query: CompiledQuery): Promise<PlanNode[]> {
    const result = await database.db.executeQuery<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(
      CompiledQuery.raw(`explain (analyze, format json) ${query.sql}`, [...query.parameters]),
    );
    return nodes(result.rows[0]['QUERY PLAN'][0].Plan);
  }

  beforeAll(async () => {
    const fresh = testDatabase('social');
    cleanup = fresh.cleanup;
    const config = loadConfig({
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
      ARGON2_MEMORY_KIB: '1024',
      ARGON2_TIME_COST: '1',
    });
    config.database = { ...fresh.config };
    database = await openDatabase<SocialDatabase>(config.database, {
      onQuery: (event) => {
        if (recording) statements.push(event.query);
      },
    });
    app = await buildApp(config, { database });
    await app.ready();
    const { db } = database;

    // Many users who follow each other and post, written in bulk (as `fake users`/`fake posts` would).
    await sql`insert into users (username, email) select 'fan' || lpad(g::text, 5, '0'), 'fan' || g || '@example.com' from generate_series(1, ${FANS}) g`.execute(
      db,
    );
    fanIds = (
      await db.selectFrom('users').select('id').where('username', 'like', 'fan%').orderBy('id').execute()
    ).map((r) => r.id);
    // In four statements: each follow row takes its users' names as it is written (a trigger), and
    // 200,000 of them in one statement would outlast the statement timeout.
    for (let part = 0; part < 4; part++)
      await sql`
        with fan as (select id, row_number() over (order by id) - 1 as n from users where username like 'fan%')
        insert into followers (follower_id, followed_id)
        select a.id, b.id from fan a cross join generate_series(1, 10) k join fan b on b.n = (a.n + k * 37) % ${FANS}
        where a.n % 4 = ${part}
      `.execute(db);
    await sql`
      insert into posts (user_id, text, timestamp)
      select u.id, 'post ' || k || ' of ' || u.username,
             timestamptz '2026-01-01 00:00:00+00' + ((u.id * 7919 + k * 104729) % 30000000) * interval '1 second'
      from users u cross join generate_series(1, 10) k where u.username like 'fan%' and u.id <= ${fanIds[POSTERS - 1]}
    `.execute(db);
    prolificId = fanIds[0];
    await sql`
      insert into posts (user_id, text, timestamp)
      select ${prolificId}, 'prolific ' || g, timestamptz '2026-01-01 00:00:00+00' + g * interval '1 hour' from generate_series(1, ${PROLIFIC_POSTS}) g
    `.execute(db);

    viewers.none = await registerThrough(app, 'nobody');
    viewers.one = await registerThrough(app, 'single');
    viewers.many = await registerThrough(app, 'popular');
    await db
      .insertInto('followers')
      .values({ follower_id: viewers.one.id, followed_id: fanIds[100] })
      .execute();
    await db
      .insertInto('followers')
      .values(fanIds.slice(200, 230).map((id) => ({ follower_id: viewers.many.id, followed_id: id })))
      .execute();
    // Each viewer posts too: the feed has their own posts.
    for (const v of Object.values(viewers)) {
      for (let i = 0; i < 3; i++)
        expect(
          (
            await app.inject({
              method: 'POST',
              url: '/api/posts',
              headers: { authorization: `Bearer ${v.token}` },
              payload: { text: `own ${i}` },
            })
          ).statusCode,
        ).toBe(201);
    }
    // The steady state autovacuum keeps a table in: statistics, and a visibility map that lets an
    // index answer a count without visiting the table. (After ANALYZE alone, index and sequential
    // scans of these 23,000 posts cost nearly the same, and the plan flips with ANALYZE's sample.)
    await sql`vacuum analyze users, followers, posts, tokens`.execute(db);
  }, 120_000);

  afterAll(async () => {
    await app?.close();
    await database?.close();
    await cleanup?.();
  });

  /** Per statement of a request but the authentication: its SQL and its EXPLAIN ANALYZE plan. */
  async function plans(token: string, url: string) {
    const { statements: ran } = await measure(token, url);
    const out: { sql: string; plan: PlanNode[] }[] = [];
    for (const q of ran.filter((q) => !/\bfrom "tokens"/.test(q.sql)))
      out.push({ sql: q.sql, plan: await explain(q) });
    return out;
  }
  const fullScans = (plan: PlanNode[], tables: string[]) =>
    plan
      .filter((n) => n['Node Type'] === 'Seq Scan' && tables.includes(n['Relation Name'] ?? ''))
      .map((n) => n['Relation Name']);
  const indexes = (plan: PlanNode[]) => plan.map((n) => n['Index Name']).filter(Boolean);

  type Page = {
    pagination: { total: number; count: number };
    data: { timestamp: string; author: { id: number } }[];
  };

  test('the feed is two statements (authentication, page with its total) whether one follows 0, 1 or 30 users', async () => {
    const expected = { none: 3, one: 3 + 10, many: 3 + 30 * 10 };
    const followed = { none: [] as number[], one: [fanIds[100]], many: fanIds.slice(200, 230) };
    const counts: Record<string, number> = {};
    for (const name of ['none', 'one', 'many'] as const) {
      const { res, statements: ran } = await measure(viewers[name].token, '/api/feed');
      const page = res.json() as Page;
      expect({ name, total: page.pagination.total }).toEqual({ name, total: expected[name] });
      expect(page.data).toHaveLength(Math.min(25, expected[name]));
      const allowed = new Set([viewers[name].id, ...followed[name]]);
      expect(page.data.filter((p) => !allowed.has(p.author.id))).toEqual([]);
      counts[name] = ran.length;
    }
    expect(counts.one).toBe(counts.none);
    expect(counts.many).toBe(counts.none);
    expect(counts.many).toBeLessThanOrEqual(2);
  });

  test('no statement per post or per author: any page of the feed, of any size, costs the same', async () => {
    const { token } = viewers.many;
    const first = await measure(token, '/api/feed?limit=25');
    const cursor = (first.res.json() as Page).data[24].timestamp;
    for (const url of [
      '/api/feed?limit=1',
      '/api/feed?offset=100',
      '/api/feed?offset=300&limit=25',
      `/api/feed?after=${encodeURIComponent(cursor)}`,
    ]) {
      const { res, statements: ran } = await measure(token, url);
      expect({ url, count: (res.json() as Page).pagination.count > 0, statements: ran.length }).toEqual({
        url,
        count: true,
        statements: first.statements.length,
      });
    }
  });

  // The plans below are PostgreSQL 15's at these sizes, once ANALYZE has run (above); the
  // assertions leave the planner its other index-only choices.

  test("the feed's count reads its owner's weeks (feed_weeks) and its page posts by author through posts_user_timestamp_idx, never every post or user", async () => {
    for (const url of ['/api/feed', '/api/feed?offset=300', '/api/feed?after=2026-06-01T00:00:00Z']) {
      const statementsOfFeed = await plans(viewers.many.token, url);
      expect(statementsOfFeed).toHaveLength(1);
      const [{ sql: text, plan }] = statementsOfFeed;
      expect({
        sql: text,
        fullScans: fullScans(plan, ['posts', 'users', 'followers', 'feed_weeks']),
      }).toEqual({
        sql: text,
        fullScans: [],
      });
      expect(indexes(plan)).toEqual(expect.arrayContaining(['feed_weeks_pkey', 'posts_user_timestamp_idx']));
      // Neither each author's weeks nor each author's counter: the owner's weeks alone.
      expect(plan.filter((n) => n['Relation Name'] === 'post_weeks')).toEqual([]);
      const users = plan.filter((n) => n['Relation Name'] === 'users');
      expect(
        users.reduce((sum, n) => sum + (n['Actual Rows'] ?? 0) * (n['Actual Loops'] ?? 1), 0),
      ).toBeLessThanOrEqual(25);
    }
  });

  test("a page of one author's posts is an index scan of posts_user_timestamp_idx that stops after the page, sorting nothing but the page", async () => {
    for (const [url, most, page] of [
      [`/api/users/${prolificId}/posts`, 25, 25],
      // The walk reads the offset's rows and MAX_LIMIT keys (a constant limit keeps the named
      // statement's generic plan; see `firstOfKeys`); the page keeps its 10.
      [`/api/users/${prolificId}/posts?offset=100&limit=10`, 125, 10],
    ] as const) {
      const plan = await pagePlan(viewers.none.token, url);
      // The page's own rows are put in order once they are joined; no sort sees more of the collection.
      for (const sort of plan.filter((n) => n['Node Type'] === 'Sort'))
        expect(sort['Actual Rows']).toBeLessThanOrEqual(page);
      expect(fullScans(plan, ['posts', 'users'])).toEqual([]);
      const scan = plan.find((n) => n['Index Name'] === 'posts_user_timestamp_idx');
      expect(scan).toMatchObject({
        'Relation Name': 'posts',
        'Node Type': expect.stringMatching(/^Index (Only )?Scan$/),
      });
      expect(scan?.['Actual Rows']).toBeLessThanOrEqual(most);
    }
  });

  test('follower lists read followers through their name indexes (followers_follower_name_idx, followers_followed_name_idx), never a full scan', async () => {
    for (const [url, expectedIndexes] of [
      [`/api/users/${viewers.many.id}/following`, ['followers_follower_name_idx']],
      ['/api/me/following', ['followers_follower_name_idx']],
      [`/api/users/${fanIds[5]}/followers`, ['followers_followed_name_idx']],
    ] as const) {
      const ran = await plans(viewers.many.token, url);
      const page = ran.filter((r) => /\blimit\b/i.test(r.sql));
      expect(page).toHaveLength(1);
      for (const { sql: text, plan } of ran)
        expect({ sql: text, fullScans: fullScans(plan, ['followers', 'users']) }).toEqual({
          sql: text,
          fullScans: [],
        });
      expect(
        indexes(page[0].plan).some((name) => (expectedIndexes as readonly string[]).includes(name!)),
      ).toBe(true);
    }
  });
});
