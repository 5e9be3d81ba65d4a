// Hand-run growth benchmark of social-api: `npm run bench:growth [-- --sizes=1000,100000 --duration=3]`.
// Grows one throw-away schema through the sizes (posts), and at each size starts the built service
// and measures every collection (all posts, the star's posts, the feed, followers, following, users)
// with autocannon: its first page, then pages at 50 % and 90 % of its depth by `offset` and by its
// `after` cursor, each as a ratio to that collection's first page measured just before, with its
// req/s, p99 and the CPU per request of the service and of its PostgreSQL backends. Not a test: it
// never passes or fails on a threshold. See README.md in tools/bench.
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { sql, type Kysely } from 'kysely';
import {
  analyzedDatabaseInfo,
  backendsNamed,
  databaseEnv,
  throwAwayDatabase,
  withDatabase,
  type BenchDatabase,
} from './lib/database';
import { runScenarios, type LoadOptions } from './lib/load';
import { loadAverage } from './lib/machine';
import { benchOptions, type BenchOptions } from './lib/options';
import { startService, stopNode, type Service } from './lib/processes';
import { reportHead, writeReport } from './lib/report';
import { log, runMain, stamp } from './lib/run';
import { APP_DIST, benchUser, ensureSocialApiBuild, SOCIAL_API, type BenchUser } from './social-setup';
import { collectionsOf, probeCells, scenariosOf, type Collection } from './growth/collections';
import { printGrowth, type GrowthDatabase, type GrowthReport, type SizeResult } from './growth/report';
import { growPosts, seedFollows, seedUsers, STAR_SHARE } from './growth/seed';

type Options = BenchOptions<'users' | 'follows', 'sizes'> & { postCounts: number[] };

const DEFAULT_SIZES = '1000,100000,1000000';

function options(): Options {
  const { sizes, ...opts } = benchOptions({
    command: 'npm run bench:growth',
    ...SOCIAL_API,
    own: {
      users: {
        help: 'users to seed (fake users), all following the star',
        env: 'BENCH_USERS',
        fallback: 10_000,
      },
      follows: {
        help: 'users the bench user follows (its feed, its following list)',
        env: 'BENCH_FOLLOWS',
        fallback: 2000,
      },
    },
    text: {
      sizes: { help: `posts at each size, growing (default ${DEFAULT_SIZES})`, value: 'n,n,...' },
    },
    // 28 pages a size: a few seconds each.
    loadDefaults: { duration: 3, warmup: 1, connections: 10 },
  });
  const postCounts = (sizes ?? DEFAULT_SIZES).split(',').map(Number);
  if (!postCounts.every((n, i) => Number.isInteger(n) && n >= 1 && (i === 0 || n > postCounts[i - 1])))
    throw new Error(`--sizes takes growing whole numbers of posts (got ${JSON.stringify(sizes)})`);
  return { ...opts, postCounts };
}

/** Measures every collection at the size the database has now, on `service`. */
async function measureSize(
  service: Service,
  collections: Collection[],
  auth: Record<string, string>,
  opts: Options & Pick<LoadOptions, 'postgresPids'>,
): Promise<SizeResult['collections']> {
  const { base, pid } = service;
  const measured: SizeResult['collections'] = [];
  for (const collection of collections) {
    const { total, cells } = await probeCells(base, collection, auth);
    log(`${collection.label}: ${total} items, ${cells.length} pages`);
    const results = await runScenarios(scenariosOf(collection, cells, { base, pid, auth }), opts);
    measured.push({ ...collection, total, cells: cells.map((cell, i) => ({ ...cell, result: results[i] })) });
  }
  return measured;
}

async function bench(opts: Options): Promise<void> {
  const startedAt = new Date();
  const loadAtStart = loadAverage();
  ensureSocialApiBuild(opts.build);

  const database = await throwAwayDatabase(SOCIAL_API.schemaPrefix, opts.databaseUrl);
  const { config } = database;
  log(`seeding ${opts.users} users into schema ${config.schema} ...`);
  const cast = await seedUsers(config, opts.users, opts.follows);
  // The service's connections carry this name, so only its backends' CPU counts (pg reads PGAPPNAME).
  const applicationName = `bench-growth-${randomBytes(4).toString('hex')}`;
  const postgresPids = await backendsNamed(config, applicationName);
  const env = databaseEnv(config, {
    ACCESS_TOKEN_MINUTES: '600',
    SECRET_KEY: randomBytes(24).toString('hex'),
    DISABLE_AUTH: 'no',
    PGAPPNAME: applicationName,
  });

  let first: { me: BenchUser; info: GrowthDatabase } | undefined;
  let service: Service | undefined;
  const sizes: SizeResult[] = [];
  for (const target of opts.postCounts) {
    if (service) await stopNode(service);
    log(`growing the posts to ${target} ...`);
    const grown = await growPosts(config, target, cast.star);
    // A fresh service per size: no plan or cache of a smaller size carried over.
    service = await startService('social-api', path.join(APP_DIST, 'main.js'), env, undefined);
    if (!first) {
      // Registered and logged in once (one argon2 hash, outside the measurements); its token
      // outlives the run. Then the follows, and the database as the report describes it.
      const me = await benchUser(service.base, []);
      await seedFollows(config, cast, me.id);
      first = { me, info: await withDatabase(config, (db) => describeDatabase(db, database)) };
    }
    log(`${grown.posts} posts (grown in ${grown.seconds}s, not measured):`);
    const collections = collectionsOf(cast, first.me.id);
    sizes.push({
      posts: grown.posts,
      seedSeconds: grown.seconds,
      collections: await measureSize(service, collections, first.me.auth, { ...opts, postgresPids }),
    });
  }
  if (!service || !first) throw new Error('no size measured');

  const { me, info } = first;
  const report: GrowthReport = {
    ...reportHead<'users' | 'follows', GrowthDatabase>({
      startedAt,
      loadAtStart,
      project: SOCIAL_API.project,
      opts,
      database: info,
      service,
    }),
    star: {
      id: cast.star,
      postShare: STAR_SHARE,
      followers: sizes[0].collections.find((c) => c.name === 'followers')?.total ?? 0,
    },
    benchUser: { id: me.id, username: me.username, following: cast.followed.length },
    postgresCpu: `the service's backends (application_name ${applicationName})`,
    sizes,
  };
  printGrowth(report, writeReport(`${stamp(startedAt)}-growth`, report));
}

/** The report's database section: the server, and the users and follows (the same at every size). */
async function describeDatabase(db: Kysely<unknown>, database: BenchDatabase): Promise<GrowthDatabase> {
  const counts = await sql<{ users: number; follows: number }>`select
    (select count(*)::int from users) as users, (select count(*)::int from followers) as follows`.execute(db);
  return { ...(await analyzedDatabaseInfo(db, database)), ...counts.rows[0] };
}

void runMain(options, bench);
