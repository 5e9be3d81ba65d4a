// The services the side-by-side mode measures: each seeded on a fresh schema of the bench-only
// server, started from its build, with the hot read routes to compare.
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import process from 'node:process';
import { migrateToLatest, openDatabase } from '@platform/db';
import { migrations as microblogMigrations } from '@platform/microblog-api/db/migrations';
import type { MicroblogDatabase } from '@platform/microblog-api/db/schema';
import { seedDemoData } from '@platform/microblog-api/posts/seed';
import { startService, type Service } from '../lib/processes';
import { ROOT, stamp } from '../lib/run';
import { benchUser, fake, spreadOver } from '../social-setup';
import type { CompareOptions, ServiceName } from './options';
import { freshSchema, type BenchServer } from './server';

/** A hot read route of a service, as the bench drives it (path and request, on the service's base). */
export interface Route {
  label: string;
  method: 'GET' | 'POST';
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface ServiceUnderTest {
  name: ServiceName;
  schema: string;
  service: Service;
  routes: Route[];
}

/**
 * Where the built services are: `apps/<service>-api/dist`, or under BENCH_APPS_DIR (a directory
 * holding `<service>-api/dist`, e.g. an older build to measure before/after in the same way).
 */
const APPS_DIR = process.env.BENCH_APPS_DIR
  ? path.resolve(process.env.BENCH_APPS_DIR)
  : path.join(ROOT, 'apps');
export const appDist = (name: ServiceName) => path.join(APPS_DIR, `${name}-api/dist`);

/** With --cpu-prof: the file name of a process's V8 CPU profile in results/ (written when it stops). */
export const profileName = (opts: CompareOptions, name: string) =>
  opts.cpuProf ? `${stamp(new Date())}-compare-${name}.cpuprofile` : undefined;

async function startMicroblog(server: BenchServer, opts: CompareOptions): Promise<ServiceUnderTest> {
  const schema = await freshSchema(server, 'microblog');
  const database = await openDatabase<MicroblogDatabase>({ url: server.url, schema, poolMax: 2 });
  try {
    await migrateToLatest(database.db, schema, microblogMigrations);
    await seedDemoData(database.db, opts.posts);
  } finally {
    await database.close();
  }
  await server.admin.query(`analyze`);
  const service = await startService(
    'microblog-api',
    path.join(appDist('microblog'), 'main.js'),
    { ...process.env, DATABASE_URL: server.url, DB_SCHEMA: schema, WRITE_RATE_LIMIT: '1000000000' },
    profileName(opts, 'microblog-api'),
  );
  return {
    name: 'microblog',
    schema,
    service,
    routes: [{ label: 'microblog GET /api/microblog (default page)', method: 'GET', path: '/api/microblog' }],
  };
}

async function startWorkspace(server: BenchServer, opts: CompareOptions): Promise<ServiceUnderTest> {
  const schema = await freshSchema(server, 'workspace');
  const key = { apiKey: `bench${randomBytes(6).toString('hex')}`, secret: randomBytes(16).toString('hex') };
  const service = await startService(
    'workspace-api',
    path.join(appDist('workspace'), 'main.js'),
    {
      ...process.env,
      DATABASE_URL: server.url,
      DB_SCHEMA: schema,
      BOOTSTRAP_API_KEY: key.apiKey,
      BOOTSTRAP_API_KEY_SECRET: key.secret,
    },
    profileName(opts, 'workspace-api'),
  );
  // Users straight into its tables (the service migrated them on start), each in "All Users".
  await server.admin.query(`set search_path = "${schema}"`);
  await server.admin.query(
    `with u as (insert into users (username) select 'bench' || g from generate_series(1, $1::int) g returning id)
     insert into user_groups (user_id, group_id) select u.id, g.id from u cross join groups g where g.name = 'All Users'`,
    [opts.users],
  );
  await server.admin.query('reset search_path');
  await server.admin.query('analyze');
  return {
    name: 'workspace',
    schema,
    service,
    routes: [
      {
        label: 'workspace POST /api/public/get_users (page 1 of 100)',
        method: 'POST',
        path: '/api/public/get_users',
        headers: { 'content-type': 'application/json', 'api-key': key.apiKey, 'api-key-secret': key.secret },
        body: JSON.stringify({ page: 1, page_size: 100 }),
      },
    ],
  };
}

async function startSocial(server: BenchServer, opts: CompareOptions): Promise<ServiceUnderTest> {
  const schema = await freshSchema(server, 'social');
  const env = { ...process.env, DATABASE_URL: server.url, DB_SCHEMA: schema, LOG_LEVEL: 'warn' };
  await fake('users', opts.users, env);
  await fake('posts', opts.posts, env);
  const { rows } = await server.admin.query<{ id: number }>(`select id from "${schema}".users order by id`);
  const targets = spreadOver(
    rows.map((r) => r.id),
    opts.follows,
  );
  const service = await startService(
    'social-api',
    path.join(appDist('social'), 'main.js'),
    { ...env, ACCESS_TOKEN_MINUTES: '600', SECRET_KEY: randomBytes(24).toString('hex'), DISABLE_AUTH: 'no' },
    profileName(opts, 'social-api'),
  );
  const me = await benchUser(service.base, targets);
  await server.admin.query('analyze');
  const read = (label: string, route: string): Route => ({
    label: `social GET ${label}`,
    method: 'GET',
    path: route,
    headers: me.auth,
  });
  return {
    name: 'social',
    schema,
    service,
    routes: [
      read('/api/posts', '/api/posts'),
      read(`/api/feed (following ${targets.length})`, '/api/feed'),
      read('/api/users/<id>', `/api/users/${me.id}`),
      read('/api/me', '/api/me'),
    ],
  };
}

/** Seeds and starts a service on a fresh schema of the bench-only server. */
export const startServiceUnderTest: Record<
  ServiceName,
  (server: BenchServer, opts: CompareOptions) => Promise<ServiceUnderTest>
> = {
  social: startSocial,
  microblog: startMicroblog,
  workspace: startWorkspace,
};
