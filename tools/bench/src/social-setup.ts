// What the social-api benchmarks share (social.ts, and compare's social routes): its command line
// (the fake data commands), the bench user (registered, logged in, following others) and a page's
// type. See README.md in tools/bench.
import { Buffer } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Pagination } from '@platform/social-api/pagination';
import type { TokenPair } from '@platform/social-api/tokens/schemas';
import type { User } from '@platform/social-api/users/schemas';
import { ensureServiceBuild } from './lib/build';
import { round } from './lib/numbers';
import { request, startNode } from './lib/processes';
import { ROOT } from './lib/run';

/** social-api as its benchmarks name it: the Nx project, and the prefix of their throw-away schemas. */
export const SOCIAL_API = { project: 'social-api', schemaPrefix: 'social' } as const;

export const APP_DIST = path.join(ROOT, 'apps', SOCIAL_API.project, 'dist');

/** One page of a collection: the body `Paginated(item)` of social-api's pagination.ts describes. */
export interface Page<T> {
  pagination: Pagination;
  data: T[];
}

/** Builds social-api when its build lacks the files the social benchmarks run, or when `force`d. */
export const ensureSocialApiBuild = (force: boolean) =>
  ensureServiceBuild({ project: SOCIAL_API.project, files: ['app.js', 'main.js', 'cli.js'], force });

/** `node apps/social-api/dist/cli.js <args>` on the throw-away database; its output, or an error. */
async function cli(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const proc = startNode(`social-api ${args.join(' ')}`, [path.join(APP_DIST, 'cli.js'), ...args], env);
  const { code, signal } = await proc.exited;
  if (code !== 0)
    throw new Error(
      `social-api ${args.join(' ')} failed (code ${code}, signal ${signal}):\n${proc.output()}`,
    );
  return proc.output().trim();
}

/** Runs `fake <kind> <count>` and checks its last line (`N users added.`); returns the seconds it took. */
export async function fake(
  kind: 'users' | 'posts',
  count: number,
  env: NodeJS.ProcessEnv,
): Promise<number | null> {
  const started = performance.now();
  const output = await cli(['fake', kind, String(count)], env);
  if (!output.endsWith(`${count} ${kind} added.`))
    throw new Error(`fake ${kind} ${count} printed ${JSON.stringify(output.slice(-500))}`);
  return round((performance.now() - started) / 1000, 1);
}

export interface BenchUser {
  id: number;
  username: string;
  /** The `Authorization: Bearer` header of its access token. */
  auth: { authorization: string };
}

/** Registers a fresh user, logs in (one argon2 hash and one verification) and follows `targets`. */
export async function benchUser(base: string, targets: number[]): Promise<BenchUser> {
  const suffix = randomBytes(4).toString('hex');
  const username = `bench_${suffix}`;
  const password = randomBytes(12).toString('hex');
  const json = { 'content-type': 'application/json' };
  const { json: user } = await request<User>(
    `${base}/api/users`,
    {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ username, email: `bench-${suffix}@example.com`, password }),
    },
    201,
  );
  const basic = Buffer.from(`${username}:${password}`).toString('base64');
  const { json: tokens } = await request<TokenPair>(`${base}/api/tokens`, {
    method: 'POST',
    headers: { authorization: `Basic ${basic}` },
  });
  const auth = { authorization: `Bearer ${tokens.access_token}` };
  for (const id of targets)
    await request(`${base}/api/me/following/${id}`, { method: 'POST', headers: auth }, 204);
  return { id: user.id, username, auth };
}

/** `count` of `ids` spread evenly over them (all of them when there are fewer): whom the bench user follows. */
export function spreadOver(ids: number[], count: number): number[] {
  const n = Math.min(count, ids.length);
  const step = ids.length / n;
  return Array.from({ length: n }, (_, i) => ids[Math.floor(i * step)]);
}
