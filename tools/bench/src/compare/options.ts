// The command line of the side-by-side mode (`npm run bench:compare -- --help`).
import { benchOptions, type BenchOptions } from '../lib/options';
import { log } from '../lib/run';

const SERVICES = ['social', 'microblog', 'workspace'] as const;
export type ServiceName = (typeof SERVICES)[number];

export type CompareOptions = BenchOptions<'rounds' | 'posts' | 'users' | 'follows' | 'pin'> & {
  only: ServiceName[];
  /** Only the routes whose label contains this text (e.g. `--route=/api/posts`, for a profile of one route). */
  route?: string;
};

export function compareOptions(): CompareOptions {
  const {
    only: onlyText,
    route,
    ...opts
  } = benchOptions({
    command: 'npm run bench:compare',
    project: 'social-api, microblog-api and workspace-api',
    schemaPrefix: '<service>',
    own: {
      rounds: { help: 'interleaved bare/service rounds per route', env: 'BENCH_ROUNDS', fallback: 2 },
      posts: { help: 'microblog and social posts to seed', env: 'BENCH_POSTS', fallback: 10_000 },
      users: { help: 'workspace and social users to seed', env: 'BENCH_USERS', fallback: 1000 },
      follows: { help: 'users the social bench user follows', env: 'BENCH_FOLLOWS', fallback: 50 },
      pin: {
        help: '1: load generator on CPU 0, servers and PostgreSQL on the others; 0: all share every CPU',
        env: 'BENCH_PIN',
        fallback: 1,
        min: 0,
      },
    },
    text: {
      only: { help: `services to measure (default all: ${SERVICES.join(',')})`, value: 'a,b' },
      route: { help: 'only the routes whose label contains this text', value: 'text' },
    },
  });
  const only = (onlyText ?? SERVICES.join(',')).split(',').filter(Boolean);
  for (const name of only)
    if (!SERVICES.includes(name as ServiceName))
      throw new Error(`--only takes ${SERVICES.join(', ')} (got ${JSON.stringify(name)})`);
  if (opts.databaseUrl)
    log('note: DATABASE_URL is ignored: this mode reads the statement log of its own bench-only server');
  return { ...opts, only: only as ServiceName[], route };
}
