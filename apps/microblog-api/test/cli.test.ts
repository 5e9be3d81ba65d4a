import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { openDatabase } from '@platform/db';
import { freePort, testDatabase } from '@platform/db/testing';
import { childProcessEnv } from '@platform/testing';
import type { MicroblogDatabase } from '../src/db/schema';

const run = promisify(execFile);
const APP_DIR = resolve(__dirname, '..');
const TSX = resolve(APP_DIR, '../../node_modules/.bin/tsx');

/** The command line, run as people run it (`npm run seed:microblog` calls `cli.ts seed`). */
describe('microblog-api command line', () => {
  const fresh = testDatabase('microblog');
  const env = childProcessEnv(fresh.config);
  const cli = (...args: string[]) =>
    run(TSX, ['--conditions=@platform/source', 'src/cli.ts', ...args], { cwd: APP_DIR, env });

  afterAll(async () => {
    await fresh.cleanup();
  });

  test('migrate applies the migrations once, then reports the schema up to date', async () => {
    expect((await cli('migrate')).stdout).toMatch(/applied: 2026-11-22T0000_posts_and_replies/);
    expect((await cli('migrate')).stdout).toMatch(/schema is up to date/);
  }, 60_000);

  test('seed adds the requested number of valid demo posts with replies', async () => {
    const { stdout } = await cli('seed', '--posts=120');
    const [, posts, replies] = stdout.match(/(\d+) posts, (\d+) replies added\./) ?? [];
    expect(Number(posts)).toBe(120);

    const database = await openDatabase<MicroblogDatabase>(fresh.config);
    try {
      const rows = await database.db.selectFrom('posts').selectAll().execute();
      expect(rows).toHaveLength(120);
      const replyRows = await sql<{ n: number }>`select count(*)::int as n from replies`.execute(database.db);
      expect(replyRows.rows[0].n).toBe(Number(replies));
      const counted = rows.reduce((sum, r) => sum + r.reply_count, 0);
      expect(counted).toBe(Number(replies));
      // Newer ids are never older posts: seeded history reads like real traffic.
      const byId = [...rows].sort((a, b) => a.id - b.id);
      expect(byId.every((r, i) => i === 0 || r.created_at >= byId[i - 1].created_at)).toBe(true);
    } finally {
      await database.close();
    }
  }, 60_000);

  test('bad arguments exit non-zero with a message', async () => {
    await expect(cli('seed', '--posts=-3')).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/--posts must be a positive integer/),
    });
    await expect(cli('frobnicate')).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/usage: microblog-api/),
    });
  }, 60_000);

  test('an argument is checked before the database opens: a database that refuses changes nothing', async () => {
    const refusing = `postgres://postgres@127.0.0.1:${await freePort()}/postgres`;
    const seed = (...args: string[]) =>
      run(TSX, ['--conditions=@platform/source', 'src/cli.ts', 'seed', ...args], {
        cwd: APP_DIR,
        env: { ...env, DATABASE_URL: refusing },
      });
    await expect(seed('--posts=-3')).rejects.toMatchObject({
      code: 1,
      stdout: '',
      stderr: '--posts must be a positive integer\n',
    });
    await expect(seed('--pots=3')).rejects.toMatchObject({
      code: 2,
      stdout: '',
      stderr: expect.stringMatching(/^seed: Unknown option '--pots'.*\nusage: microblog-api/s),
    });
    // The same database is really refused once the arguments are good.
    await expect(seed('--posts=3')).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/ECONNREFUSED/),
    });
  }, 60_000);
});
