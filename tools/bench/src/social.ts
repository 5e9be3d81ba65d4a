// Hand-run load benchmark of social-api: `npm run bench:social [-- --users=N --posts=N --duration=S]`.
// Seeds a throw-away database with the service's own `fake` commands, starts the built service and
// a bare Fastify baseline in child processes, logs in as a fresh user who follows some others, drives
// the feed, the posts, a followers list and post creation with autocannon on loopback, and reports
// every figure as a ratio to the baseline measured in the same run. Not a test: it never passes or
// fails on a threshold. See README.md in tools/bench.
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { Post } from '@platform/social-api/posts/schemas';
import type { User } from '@platform/social-api/users/schemas';
import { sql } from 'kysely';
import { startBaseline } from './lib/baselines';
import {
  analyzedDatabaseInfo,
  databaseEnv,
  throwAwayDatabase,
  withDatabase,
  type BenchDatabase,
  type DatabaseInfo,
} from './lib/database';
import { counterAfterRun, reqPerSecRatio, runScenarios, type CounterCheck, type Scenario } from './lib/load';
import { loadAverage } from './lib/machine';
import { benchOptions, type BenchOptions } from './lib/options';
import { request, startService, type Answer } from './lib/processes';
import { printReport, reportHead, writeReport, type Report } from './lib/report';
import { log, runMain, stamp } from './lib/run';
import {
  APP_DIST,
  benchUser,
  ensureSocialApiBuild,
  fake,
  SOCIAL_API,
  spreadOver,
  type BenchUser,
  type Page,
} from './social-setup';

type Options = BenchOptions<'users' | 'posts' | 'follows'>;

const options = (): Options =>
  benchOptions({
    command: 'npm run bench:social',
    ...SOCIAL_API,
    own: {
      users: {
        help: 'users to seed (fake users: each follows 0..5 others)',
        env: 'BENCH_USERS',
        fallback: 1000,
      },
      posts: {
        help: 'posts to seed (fake posts: random authors, this year)',
        env: 'BENCH_POSTS',
        fallback: 20_000,
      },
      follows: {
        help: "users the bench user follows (its feed's authors)",
        env: 'BENCH_FOLLOWS',
        fallback: 50,
      },
    },
  });

interface SeededDatabase extends DatabaseInfo {
  users: number;
  posts: number;
  follows: number;
  mostFollowed: { id: number; followers: number };
  seedSeconds: { users: number | null; posts: number | null };
  analyzed: true;
}

interface SocialReport extends Report<SeededDatabase> {
  benchUser: { id: number; username: string; following: number; feedPosts: number };
  deepCursor: { offset: number; postId: number; timestamp: string; reportedOffset: number };
  feedDeepToFirstRatio: number | null;
  postCheck: CounterCheck & { userId: number; postsBefore: number; postsAfter: number };
}

/** Seeds with the service's command line, then reads what the scenarios need (in this process). */
async function prepareDatabase(opts: Options): Promise<{
  config: BenchDatabase['config'];
  info: SeededDatabase;
  followTargets: number[];
}> {
  const throwAway = await throwAwayDatabase(SOCIAL_API.schemaPrefix, opts.databaseUrl);
  const { config } = throwAway;
  const env = databaseEnv(config, { LOG_LEVEL: 'warn' });
  const usersSeconds = await fake('users', opts.users, env);
  const postsSeconds = await fake('posts', opts.posts, env);
  return withDatabase(config, async (db) => {
    // (The fake commands analyze what they load too.)
    const analyzed = await analyzedDatabaseInfo(db, throwAway);
    const stats = (
      await sql<{
        users: number;
        posts: number;
        follows: number;
      }>`select (select count(*)::int from users) as users, (select count(*)::int from posts) as posts,
        (select count(*)::int from followers) as follows`.execute(db)
    ).rows[0];
    const mostFollowed = (
      await sql<SeededDatabase['mostFollowed']>`select followed_id as id, count(*)::int as followers
        from followers group by followed_id order by count(*) desc, followed_id limit 1`.execute(db)
    ).rows[0];
    const ids = (await sql<{ id: number }>`select id from users order by id`.execute(db)).rows.map(
      (r) => r.id,
    );
    // Users spread evenly over the ids: a feed of about follows × posts/users posts.
    const followTargets = spreadOver(ids, opts.follows);
    return {
      config,
      info: {
        ...analyzed,
        users: stats.users,
        posts: stats.posts,
        follows: stats.follows,
        mostFollowed: mostFollowed ?? { id: ids[0], followers: 0 },
        seedSeconds: { users: usersSeconds, posts: postsSeconds },
      },
      followTargets,
    };
  });
}

/** How many posts the bench user has written (the post-creation counter). */
async function postsOf(base: string, auth: BenchUser['auth'], userId: number): Promise<number> {
  const { json } = await request<Page<Post>>(`${base}/api/users/${userId}/posts?limit=1`, {
    headers: auth,
  });
  return json.pagination.total;
}

async function bench(opts: Options): Promise<void> {
  const startedAt = new Date();
  // Other work on the machine skews every figure (ratios less so): recorded, and shown in the report.
  const loadAtStart = loadAverage();
  ensureSocialApiBuild(opts.build);

  log(
    `seeding ${opts.users} users and ${opts.posts} posts into ${opts.databaseUrl ? 'PostgreSQL (fresh schema)' : 'the local PostgreSQL (fresh schema)'} with social-api's fake commands ...`,
  );
  const { config, info: db, followTargets } = await prepareDatabase(opts);
  log(
    `seeded ${db.users} users (${db.follows} follows) in ${db.seedSeconds.users}s and ${db.posts} posts in ${db.seedSeconds.posts}s (not measured)`,
  );

  // The service as it runs, quiet, with an access token that outlives the run. The one login hashes
  // with the default argon2 cost: it happens once, outside the measurements.
  const cpuProfile = opts.cpuProf ? `${stamp(startedAt)}-social-api.cpuprofile` : undefined;
  const service = await startService(
    'social-api',
    path.join(APP_DIST, 'main.js'),
    databaseEnv(config, {
      ACCESS_TOKEN_MINUTES: '600',
      SECRET_KEY: randomBytes(24).toString('hex'),
      DISABLE_AUTH: 'no',
    }),
    cpuProfile,
  );
  const base = service.base;
  const me = await benchUser(base, followTargets);
  log(`logged in as ${me.username} (id ${me.id}), following ${followTargets.length} users`);
  await withDatabase(config, (pg) => sql`analyze`.execute(pg));

  // One look at each request before the load: sizes, and that they are what the scenario claims.
  // The probe post comes first, so the feed the baseline copies is the feed the scenarios read.
  const newPost = {
    method: 'POST',
    headers: { ...me.auth, 'content-type': 'application/json' },
    body: JSON.stringify({ text: 'A benchmark post, the same text every time.' }),
  } as const;
  const probe = await request(`${base}/api/posts`, newPost, 201);
  const get = { headers: me.auth };
  const feed = await request<Page<Post>>(`${base}/api/feed`, get);
  const feedTotal = feed.json.pagination.total;
  // The deep cursor: the timestamp of the post ~80 % down the feed (posts strictly older follow it).
  const cursorOffset = Math.floor(feedTotal * 0.8);
  const cursorPost = (await request<Page<Post>>(`${base}/api/feed?offset=${cursorOffset}&limit=1`, get)).json
    .data[0];
  const deepUrl = `${base}/api/feed?after=${encodeURIComponent(cursorPost.timestamp)}`;
  const deep = await request<Page<Post>>(deepUrl, get);
  if (deep.json.data.some((p) => p.timestamp >= cursorPost.timestamp))
    throw new Error('the deep feed page holds posts not older than its cursor');
  const all = await request<Page<Post>>(`${base}/api/posts`, get);
  const followersUrl = `${base}/api/users/${db.mostFollowed.id}/followers`;
  const followers = await request<Page<User>>(followersUrl, get);
  const postsBefore = await postsOf(base, me.auth, me.id);

  // The baseline: the feed's bytes and content type, from memory, in its own process.
  const baseline = await startBaseline('/api/feed', feed, ['content-type'], get);

  const pid = service.pid;
  const items = (r: Answer<Page<unknown>>) => r.json.data.length;
  const scenarios: Scenario[] = [
    {
      name: 'baseline',
      label: 'baseline: bare Fastify, feed bytes from memory',
      url: baseline.url,
      headers: me.auth,
      pid: baseline.pid,
      bytes: feed.bytes.length,
      items: items(feed),
    },
    {
      name: 'feed',
      label: `GET /api/feed (first page of ${feedTotal})`,
      url: `${base}/api/feed`,
      headers: me.auth,
      pid,
      bytes: feed.bytes.length,
      items: items(feed),
    },
    {
      name: 'feed-deep',
      label: `GET /api/feed?after=<post ${deep.json.pagination.offset} of ${feedTotal}> (deep)`,
      url: deepUrl,
      headers: me.auth,
      pid,
      bytes: deep.bytes.length,
      items: items(deep),
    },
    {
      name: 'posts',
      label: `GET /api/posts (first page of ${all.json.pagination.total})`,
      url: `${base}/api/posts`,
      headers: me.auth,
      pid,
      bytes: all.bytes.length,
      items: items(all),
    },
    {
      name: 'followers',
      label: `GET /api/users/${db.mostFollowed.id}/followers (${followers.json.pagination.total} users)`,
      url: followersUrl,
      headers: me.auth,
      pid,
      bytes: followers.bytes.length,
      items: items(followers),
    },
    // Last: the new posts are the bench user's, so they would change the feed the others read.
    {
      name: 'create-post',
      label: 'POST /api/posts',
      url: `${base}/api/posts`,
      ...newPost,
      pid,
      bytes: probe.bytes.length,
      items: 1,
    },
  ];

  const results = await runScenarios(scenarios, opts);

  // Every 201 must be one new post of the bench user.
  const { after: postsAfter, ...posts } = await counterAfterRun(results, 'create-post', {
    before: postsBefore,
    read: () => postsOf(base, me.auth, me.id),
  });
  const postCheck = { userId: me.id, postsBefore, postsAfter, ...posts };

  const report: SocialReport = {
    ...reportHead({ startedAt, loadAtStart, project: SOCIAL_API.project, opts, database: db, service }),
    benchUser: { id: me.id, username: me.username, following: followTargets.length, feedPosts: feedTotal },
    deepCursor: {
      offset: cursorOffset,
      postId: cursorPost.id,
      timestamp: cursorPost.timestamp,
      reportedOffset: deep.json.pagination.offset,
    },
    feedDeepToFirstRatio: reqPerSecRatio(results, 'feed-deep', 'feed'),
    cpuProfile: cpuProfile ? `tools/bench/results/${cpuProfile}` : null,
    postCheck,
    scenarios: results,
  };
  const file = writeReport(`${stamp(startedAt)}-social`, report);

  const pc = postCheck;
  printReport(report, file, {
    title: 'social-api bench',
    seeded: `${db.users} users / ${db.follows} follows / ${db.posts} posts, bench user follows ${followTargets.length} (feed of ${feedTotal})`,
    notes: [
      `deep feed page / first feed page req/s: ${report.feedDeepToFirstRatio?.toFixed(3) ?? 'n/a'}`,
      `post counter (warm-up included): ${pc.postsBefore} → ${pc.postsAfter} posts, +${pc.added} for ${pc.answered2xx} answered 2xx / ${pc.sent} sent` +
        (pc.consistent ? ' (consistent)' : ' (INCONSISTENT: posts lost or extra)'),
    ],
  });
}

void runMain(options, bench);
