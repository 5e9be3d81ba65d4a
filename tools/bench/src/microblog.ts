// Hand-run load benchmark of microblog-api: `npm run bench [-- --posts=N --duration=S --connections=C]`.
// Seeds a throw-away database, starts the built service and a bare Fastify baseline in child
// processes, drives both with autocannon on loopback and reports every figure as a ratio to the
// baseline measured in the same run. Not a test: it never passes or fails on a threshold.
// See README.md in tools/bench.
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { migrateToLatest, openDatabase } from '@platform/db';
import { migrations } from '@platform/microblog-api/db/migrations';
import type { MicroblogDatabase } from '@platform/microblog-api/db/schema';
import type { Post } from '@platform/microblog-api/posts/schemas';
import { seedDemoData } from '@platform/microblog-api/posts/seed';
import { sql } from 'kysely';
import { startBaseline } from './lib/baselines';
import { ensureServiceBuild } from './lib/build';
import {
  analyzedDatabaseInfo,
  databaseEnv,
  throwAwayDatabase,
  type BenchDatabase,
  type DatabaseInfo,
} from './lib/database';
import { counterAfterRun, reqPerSecRatio, runScenarios, type CounterCheck, type Scenario } from './lib/load';
import { loadAverage } from './lib/machine';
import { round } from './lib/numbers';
import { benchOptions, type BenchOptions } from './lib/options';
import { request, startService } from './lib/processes';
import { printReport, reportHead, writeReport, type Report } from './lib/report';
import { log, ROOT, runMain, stamp } from './lib/run';

const APP_DIST = path.join(ROOT, 'apps/microblog-api/dist');

type Options = BenchOptions<'posts'>;

const options = (): Options =>
  benchOptions({
    command: 'npm run bench',
    project: 'microblog-api',
    schemaPrefix: 'microblog',
    own: { posts: { help: 'posts to seed (each with 0..3 replies)', env: 'BENCH_POSTS', fallback: 10_000 } },
  });

interface SeededDatabase extends DatabaseInfo {
  posts: number;
  replies: number;
  onlineSafetyPosts: number;
  newestId: number;
  oldestId: number;
  /** The `before` cursor of the deep page: the id just above the 150 oldest posts. */
  deepBefore: number;
  seedSeconds: number | null;
  analyzed: true;
  seededReplies: number;
}

interface MicroblogReport extends Report<SeededDatabase> {
  deepToFirstPageRatio: number | null;
  reactionCheck: CounterCheck & { postId: number; likesBefore: number; likesAfter: number };
}

/** Seeds the throw-away database (a fresh schema) with the service's own seed, in this process. */
async function prepareDatabase(
  opts: Options,
): Promise<{ config: BenchDatabase['config']; info: SeededDatabase }> {
  const throwAway = await throwAwayDatabase('microblog', opts.databaseUrl);
  const { config } = throwAway;
  const database = await openDatabase<MicroblogDatabase>(config);
  try {
    await migrateToLatest(database.db, database.schema, migrations);
    const started = performance.now();
    const seeded = await seedDemoData(database.db, opts.posts);
    const seedSeconds = (performance.now() - started) / 1000;
    const analyzed = await analyzedDatabaseInfo(database.db, throwAway);
    const stats = (
      await sql<{
        min_id: number;
        max_id: number;
        posts: number;
        replies: number;
        online_safety: number;
      }>`select min(id) as min_id, max(id) as max_id, count(*)::int as posts,
        (select count(*)::int from replies) as replies,
        count(*) filter (where quest_topic = 'online_safety')::int as online_safety
        from posts`.execute(database.db)
    ).rows[0];
    // "Near the oldest": the page just above the 150 oldest posts (still a full page with a next link).
    const deep = (
      await sql<{
        id: number;
      }>`select id from posts order by id asc offset ${Math.min(150, opts.posts - 1)} limit 1`.execute(
        database.db,
      )
    ).rows[0];
    return {
      config,
      info: {
        ...analyzed,
        posts: stats.posts,
        replies: stats.replies,
        onlineSafetyPosts: stats.online_safety,
        newestId: stats.max_id,
        oldestId: stats.min_id,
        deepBefore: deep.id,
        seedSeconds: round(seedSeconds, 1),
        seededReplies: seeded.replies,
      },
    };
  } finally {
    await database.close();
  }
}

async function likesOf(base: string, postId: number): Promise<number> {
  const { json } = await request<Post[]>(`${base}/api/microblog?before=${postId + 1}&limit=1`);
  if (json[0]?.id !== postId) throw new Error(`post ${postId} not found`);
  return json[0].reactions.like;
}

async function bench(opts: Options): Promise<void> {
  const startedAt = new Date();
  // Other work on the machine skews every figure (ratios less so): recorded, and shown in the report.
  const loadAtStart = loadAverage();
  ensureServiceBuild({ project: 'microblog-api', files: ['app.js', 'main.js'], force: opts.build });

  log(
    `seeding ${opts.posts} posts into ${opts.databaseUrl ? 'PostgreSQL (fresh schema)' : 'the local PostgreSQL (fresh schema)'} ...`,
  );
  const { config, info: db } = await prepareDatabase(opts);
  log(`seeded ${db.posts} posts, ${db.replies} replies in ${db.seedSeconds}s (not measured)`);

  // The service, as it runs in production, but quiet and with writes effectively unlimited.
  const cpuProfile = opts.cpuProf ? `${stamp(startedAt)}-microblog-api.cpuprofile` : undefined;
  const service = await startService(
    'microblog-api',
    path.join(APP_DIST, 'main.js'),
    databaseEnv(config, { WRITE_RATE_LIMIT: '1000000000' }),
    cpuProfile,
  );
  const base = service.base;

  // One look at each page before the load: sizes, and that they are what the scenario claims.
  const first = await request<Post[]>(`${base}/api/microblog`);
  const deepUrl = `${base}/api/microblog?before=${db.deepBefore}`;
  const deep = await request<Post[]>(deepUrl);
  const topicUrl = `${base}/api/microblog?topic=online_safety`;
  const topic = await request<Post[]>(topicUrl);
  if (topic.json.some((p) => p.quest_topic !== 'online_safety'))
    throw new Error('topic page holds other topics');
  const reactionPost = db.newestId;
  const reaction = {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ post_id: reactionPost, reaction_type: 'like' }),
  } as const;
  const probe = await request(`${base}/api/microblog/reaction`, reaction);
  const likesBefore = await likesOf(base, reactionPost);

  // The baseline: same body bytes, content type and Link header, from memory, in its own process.
  const baseline = await startBaseline('/api/microblog', first, ['content-type', 'link']);

  const scenarios: Scenario[] = [
    {
      name: 'baseline',
      label: 'baseline: bare Fastify, same body from memory',
      url: baseline.url,
      pid: baseline.pid,
      bytes: first.bytes.length,
      items: first.json.length,
    },
    {
      name: 'first-page',
      label: 'GET /api/microblog (first page)',
      url: `${base}/api/microblog`,
      pid: service.pid,
      bytes: first.bytes.length,
      items: first.json.length,
    },
    {
      name: 'deep-page',
      label: `GET /api/microblog?before=${db.deepBefore} (deep)`,
      url: deepUrl,
      pid: service.pid,
      bytes: deep.bytes.length,
      items: deep.json.length,
    },
    {
      name: 'topic',
      label: 'GET /api/microblog?topic=online_safety',
      url: topicUrl,
      pid: service.pid,
      bytes: topic.bytes.length,
      items: topic.json.length,
    },
    {
      name: 'reaction',
      label: `POST /api/microblog/reaction (post ${reactionPost})`,
      url: `${base}/api/microblog/reaction`,
      ...reaction,
      pid: service.pid,
      bytes: probe.bytes.length,
      items: 1,
    },
  ];

  const results = await runScenarios(scenarios, opts);

  // A reaction is a counter: every 2xx must have added one like.
  const { after: likesAfter, ...likes } = await counterAfterRun(results, 'reaction', {
    before: likesBefore,
    read: () => likesOf(base, reactionPost),
  });
  const reactionCheck = { postId: reactionPost, likesBefore, likesAfter, ...likes };

  const report: MicroblogReport = {
    ...reportHead({ startedAt, loadAtStart, project: 'microblog-api', opts, database: db, service }),
    deepToFirstPageRatio: reqPerSecRatio(results, 'deep-page', 'first-page'),
    cpuProfile: cpuProfile ? `tools/bench/results/${cpuProfile}` : null,
    reactionCheck,
    scenarios: results,
  };
  const file = writeReport(stamp(startedAt), report);

  const rc = reactionCheck;
  printReport(report, file, {
    title: 'microblog-api bench',
    seeded: `${db.posts} posts / ${db.replies} replies`,
    notes: [
      `deep page / first page req/s: ${report.deepToFirstPageRatio?.toFixed(3) ?? 'n/a'}`,
      `reaction counter (warm-up included): ${rc.likesBefore} → ${rc.likesAfter} likes, +${rc.added} for ${rc.answered2xx} answered 2xx / ${rc.sent} sent` +
        (rc.consistent ? ' (consistent: no lost counts)' : ' (INCONSISTENT: counts lost or extra)'),
    ],
  });
}

void runMain(options, bench);
