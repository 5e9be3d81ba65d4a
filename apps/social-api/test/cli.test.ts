import { execFile, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { faker } from '@faker-js/faker';
import { fullFormats } from 'ajv-formats/dist/formats';
import { sql, type Kysely } from 'kysely';
import { migrateToLatest, openDatabase } from '@platform/db';
import { freePort, testDatabase } from '@platform/db/testing';
import { childProcessEnv } from '@platform/testing';
import { buildApp } from '../src/app';
import { loadConfig } from '../src/config';
import type { SocialDatabase } from '../src/db/schema';
import { migrations } from '../src/db/migrations';
import { fakeUsers, isValidUsername } from '../src/seed/users';
import { withFreshDatabase } from './support/database';

const run = promisify(execFile);
const APP_DIR = resolve(__dirname, '..');
/** The command line as `npm run cli` runs it: TypeScript sources, workspace libraries from source. */
const CLI = ['--conditions=@platform/source', '--import', 'tsx', 'src/cli.ts'];
/** The email check the API's `format: "email"` applies (Fastify's ajv-formats, full mode). */
const EMAIL = fullFormats.email as RegExp;

/**
 * The real command line in a child process, pointed at a fresh database: a new schema of the test
 * PostgreSQL. The tests look at what a command stored after it exited, on the same schema.
 */
describe('social-api command line', () => {
  const fresh = testDatabase('social');
  const env = childProcessEnv(fresh.config, { LOG_LEVEL: 'silent' });
  const cli = (...args: string[]) => run(process.execPath, [...CLI, ...args], { cwd: APP_DIR, env });

  async function withDatabase<T>(use: (db: Kysely<SocialDatabase>) => Promise<T>): Promise<T> {
    const database = await openDatabase<SocialDatabase>(loadConfig(env).database);
    try {
      return await use(database.db);
    } finally {
      await database.close();
    }
  }
  const count = async (db: Kysely<SocialDatabase>, table: keyof SocialDatabase) =>
    Number(
      (
        await db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  afterAll(async () => {
    await fresh.cleanup();
  });

  test('no command prints the usage (exit 0); an unknown command or a malformed fake command prints it on stderr, exit 2', async () => {
    const none = await cli();
    expect(none.stdout).toMatch(
      /^usage: social-api <command>\n {2}serve \[--port=N\] \[--host=H\].*\n {2}migrate.*\n {2}fake users <N>.*\n {2}fake posts <N>/,
    );
    for (const args of [
      ['frobnicate'],
      ['fake', 'widgets', '3'],
      ['fake', 'users'],
      ['fake', 'users', '3', '4'],
      ['serve', '--verbose'],
    ]) {
      await expect(cli(...args)).rejects.toMatchObject({
        code: 2,
        stdout: '',
        stderr: expect.stringContaining('usage: social-api <command>'),
      });
    }
    await expect(cli('frobnicate')).rejects.toMatchObject({
      stderr: expect.stringMatching(/^unknown command: frobnicate\n/),
    });
  }, 60_000);

  test('a count that is not a whole number of at least 1 exits 1 with a message', async () => {
    for (const [kind, value] of [
      ['posts', 'abc'],
      ['users', '0'],
      ['users', '-3'],
      ['posts', '1.5'],
      ['posts', '1e3'],
    ]) {
      await expect(cli('fake', kind, value)).rejects.toMatchObject({
        code: 1,
        stdout: '',
        stderr: `fake ${kind}: the count must be a whole number of at least 1, not "${value}"\n`,
      });
    }
  }, 60_000);

  test('migrate creates the tables, then says the schema is up to date', async () => {
    expect((await cli('migrate')).stdout).toBe(
      'applied: 2026-11-22T1000_users_posts_followers_tokens, 2026-11-22T1100_spent_oauth2_states, 2026-11-25T1000_counters, 2026-11-28T1200_user_reset_secret_email_verified, 2026-11-28T1300_service_secrets, 2026-11-28T1400_post_positions, 2026-11-28T1500_user_positions, 2026-11-28T1600_follow_names, 2026-11-28T1700_feed_weeks, 2026-11-28T1800_events\n',
    );
    expect((await cli('migrate')).stdout).toBe('schema is up to date\n');
    await withDatabase(async (db) => {
      for (const table of ['users', 'posts', 'followers', 'tokens', 'spent_oauth2_states'] as const)
        expect(await count(db, table)).toBe(0);
    });
  }, 60_000);

  test('fake posts with no users exits 1 with a clear message and adds nothing', async () => {
    await expect(cli('fake', 'posts', '5')).rejects.toMatchObject({
      code: 1,
      stdout: '',
      stderr: 'there are no users to write the posts: add some first with `fake users <count>`\n',
    });
    await withDatabase(async (db) => expect(await count(db, 'posts')).toBe(0));
  }, 60_000);

  test('fake users 10 adds 10 users the API accepts, without passwords, following 0-5 of each other, never themselves', async () => {
    expect((await cli('fake', 'users', '10')).stdout).toBe('10 users added.\n');
    const users = await withDatabase(async (db) => {
      const rows = await db.selectFrom('users').selectAll().orderBy('id').execute();
      const follows = await db.selectFrom('followers').selectAll().execute();
      return { rows, follows };
    });
    expect(users.rows).toHaveLength(10);
    for (const user of users.rows) {
      expect(isValidUsername(user.username)).toBe(true);
      expect(user.username).toMatch(/^\p{L}.{2,63}$/u);
      expect(user.email.length).toBeLessThanOrEqual(120);
      expect(user.email).toMatch(EMAIL);
      expect(user.about_me).toMatch(/^[A-Z][^.]*\.$/); // one sentence
      expect(user.about_me!.length).toBeLessThanOrEqual(140);
      expect(user.password_hash).toBeNull();
    }
    const ids = new Set(users.rows.map((u) => u.id));
    expect(users.follows.length).toBeGreaterThan(0); // all ten following no one: 6^-10
    for (const f of users.follows) {
      expect(ids.has(f.follower_id) && ids.has(f.followed_id)).toBe(true);
      expect(f.follower_id).not.toBe(f.followed_id);
    }
    const perFollower = new Map<number, number>();
    for (const f of users.follows) perFollower.set(f.follower_id, (perFollower.get(f.follower_id) ?? 0) + 1);
    expect(Math.max(...perFollower.values())).toBeLessThanOrEqual(5);

    // What API clients see: no password, so no login.
    const app = await buildApp(loadConfig({ ...env, DISABLE_AUTH: '1' }));
    try {
      const listed = await app.inject({ url: '/api/users?limit=25' });
      expect(listed.statusCode).toBe(200);
      const seen: { username: string; has_password: boolean }[] = listed.json().data;
      expect(seen.map((u) => u.username).sort()).toEqual(users.rows.map((u) => u.username).sort());
      expect(seen.every((u) => u.has_password === false)).toBe(true);
    } finally {
      await app.close();
    }
  }, 90_000);

  test('fake users again adds exactly as many more, following only within the new batch', async () => {
    const before = await withDatabase(async (db) => ({
      maxId: Number(
        (
          await db
            .selectFrom('users')
            .select((eb) => eb.fn.max('id').as('max'))
            .executeTakeFirstOrThrow()
        ).max,
      ),
      follows: await count(db, 'followers'),
    }));
    expect((await cli('fake', 'users', '200')).stdout).toBe('200 users added.\n');
    expect((await cli('fake', 'users', '200')).stdout).toBe('200 users added.\n');
    await withDatabase(async (db) => {
      const rows = await db.selectFrom('users').select(['id', 'username', 'email']).orderBy('id').execute();
      expect(rows).toHaveLength(410);
      expect(new Set(rows.map((u) => u.username)).size).toBe(410);
      expect(new Set(rows.map((u) => u.email.toLowerCase())).size).toBe(410);
      expect(rows.every((u) => isValidUsername(u.username) && EMAIL.test(u.email))).toBe(true);
      // Each run's users are consecutive ids: a follow never crosses runs.
      const batches = [rows.slice(0, 10), rows.slice(10, 210), rows.slice(210)].map(
        (b) => new Set(b.map((u) => u.id)),
      );
      const batchOf = (id: number) => batches.findIndex((b) => b.has(id));
      const follows = await db.selectFrom('followers').selectAll().execute();
      expect(follows.filter((f) => f.follower_id <= before.maxId)).toHaveLength(before.follows);
      for (const f of follows) {
        expect(batchOf(f.follower_id)).toBe(batchOf(f.followed_id));
        expect(f.follower_id).not.toBe(f.followed_id);
      }
      // 400 users following 0-5 each: about 1000 (standard deviation ~34), far from none and from 2000.
      const added = follows.length - before.follows;
      expect(added).toBeGreaterThan(700);
      expect(added).toBeLessThan(1300);
    });
  }, 90_000);

  test('fake posts 100 adds 100 posts by existing users, 1..280 characters, dated this year and not in the future', async () => {
    expect((await cli('fake', 'posts', '100')).stdout).toBe('100 posts added.\n');
    const after = Date.now();
    const yearStart = Date.UTC(new Date(after).getUTCFullYear(), 0, 1);
    await withDatabase(async (db) => {
      const posts = await db
        .selectFrom('posts')
        .leftJoin('users', 'users.id', 'posts.user_id')
        .select(['posts.text', 'posts.timestamp', 'users.id as author'])
        .execute();
      expect(posts).toHaveLength(100);
      for (const post of posts) {
        expect(post.author).not.toBeNull();
        expect(post.text.length).toBeGreaterThanOrEqual(1);
        expect(post.text.length).toBeLessThanOrEqual(280);
        expect(post.text).toBe(post.text.trim());
        expect(post.timestamp.getTime()).toBeGreaterThanOrEqual(yearStart);
        expect(post.timestamp.getTime()).toBeLessThanOrEqual(after);
      }
      expect(new Set(posts.map((p) => p.text)).size).toBeGreaterThan(90);
      expect(new Set(posts.map((p) => p.author)).size).toBeGreaterThan(50);
      // Statistics were refreshed after the insert.
      const { rows } = await sql<{
        reltuples: number;
      }>`select reltuples from pg_class where oid = 'posts'::regclass`.execute(db);
      expect(Number(rows[0].reltuples)).toBe(100);
    });
  }, 60_000);

  test('on a terminal a progress bar shows, and the final line still follows', async () => {
    // `script` gives the command a pseudo-terminal as stdout.
    const command = [process.execPath, ...CLI, 'fake', 'posts', '20'].map((a) => `'${a}'`).join(' ');
    const { stdout } = await run('script', ['-qec', command, '/dev/null'], { cwd: APP_DIR, env });
    expect(stdout).toMatch(/posts +\[[█░]+\] \d+% \| \d+\/20/);
    expect(stdout).toMatch(/20 posts added\.\r?\n$/);
  }, 60_000);

  test('serve --port listens on that port, answers /healthz and exits 0 on SIGTERM', async () => {
    const port = await freePort();
    const server = spawn(process.execPath, [...CLI, 'serve', `--port=${port}`, '--host=127.0.0.1'], {
      cwd: APP_DIR,
      env,
      stdio: 'ignore',
    });
    const exited = new Promise<number | null>((done) => server.on('exit', (code) => done(code)));
    try {
      let health: Response | undefined;
      for (let i = 0; i < 120 && !health; i++) {
        health = await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined);
        if (!health) await new Promise((r) => setTimeout(r, 250));
      }
      expect(health?.status).toBe(200);
    } finally {
      server.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  }, 60_000);
});

describe('fake users with taken names', () => {
  test('candidates someone already has are skipped and topped up with numbered names: exactly N are added', async () => {
    await withFreshDatabase(async (database) => {
      try {
        await migrateToLatest(database.db, database.schema, migrations);
        const quiet = () => ({ advance: () => undefined, stop: () => undefined });
        faker.seed(20261122);
        expect(await fakeUsers(database.db, 30, { progressBar: quiet })).toBe(30);
        // Same seed: the first 30 candidates are exactly the names and emails now taken.
        faker.seed(20261122);
        expect(await fakeUsers(database.db, 30, { progressBar: quiet })).toBe(30);
        const rows = await database.db
          .selectFrom('users')
          .select(['id', 'username', 'email'])
          .orderBy('id')
          .execute();
        expect(rows).toHaveLength(60);
        const second = rows.slice(30);
        expect(new Set(rows.map((u) => u.username)).size).toBe(60);
        expect(new Set(rows.map((u) => u.email.toLowerCase())).size).toBe(60);
        // Every one of them went through a top-up round: they all end with a number.
        expect(
          second.every((u) => /\d$/.test(u.username) && isValidUsername(u.username) && EMAIL.test(u.email)),
        ).toBe(true);
      } finally {
        faker.seed();
      }
    });
  }, 60_000);
});
