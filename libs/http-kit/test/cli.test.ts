import type { Database, Migration } from '@platform/db';
import { freePort, testDatabase } from '@platform/db/testing';
import { runCommandLine, UsageError, type CliConfig } from '../src';

interface Notes {
  notes: { text: string };
}

const migrations: Record<string, Migration> = {
  '0001_notes': {
    up: async (db) => {
      await db.schema.createTable('notes').addColumn('text', 'text').execute();
    },
  },
};

/** A service's command line with commands of its own, over the given database. */
function demoCli(database: CliConfig['database']) {
  const calls = { loadConfig: 0, run: 0 };
  let opened: Database<Notes> | undefined;
  const stdout: string[] = [];
  const stderr: string[] = [];
  const run = async (...argv: string[]) => {
    stdout.length = 0;
    stderr.length = 0;
    const code = await runCommandLine(
      {
        name: 'demo-api',
        loadConfig: (env) => {
          if (Object.keys(env).length) calls.loadConfig += 1; // not the usage's look at the defaults
          return { port: 4321, host: '127.0.0.1', database };
        },
        loadApp: async () => ({
          buildApp: async (_config: CliConfig, _deps?: { database?: Database<Notes> }) => {
            throw new Error('serve is not part of these tests');
          },
        }),
        migrations,
        commands: {
          note: {
            usage: '  note [--times=N] TEXT         store TEXT N times (default 1)',
            options: { times: { type: 'string', default: '1' } },
            positionals: { min: 1 },
            run({ values, positionals: [text] }, { withDatabase, out }) {
              calls.run += 1;
              const times = Number(values.times);
              if (!Number.isInteger(times) || times < 1)
                throw new Error('--times must be a positive integer');
              return withDatabase(async (db) => {
                opened = db;
                for (let i = 0; i < times; i++) await db.db.insertInto('notes').values({ text }).execute();
                out(`${times} stored`);
              });
            },
          },
          fail: {
            usage: '  fail KIND                     fails inside the database (KIND: error or usage)',
            positionals: { min: 1 },
            run({ positionals: [kind] }, { withDatabase }) {
              calls.run += 1;
              return withDatabase(async (db) => {
                opened = db;
                throw kind === 'usage'
                  ? new UsageError('fail: not like that')
                  : new Error('it broke\n  here');
              });
            },
          },
          echo: {
            usage: '  echo ARGS...                  prints its arguments',
            positionals: { min: 0, max: Infinity },
            run({ positionals }, { out }) {
              calls.run += 1;
              out(positionals.join(' '));
              return 0;
            },
          },
        },
      },
      argv,
      { out: (line) => stdout.push(line), err: (text) => stderr.push(text) },
    );
    return { code, stdout: stdout.join('\n'), stderr: stderr.join('\n') };
  };
  return { run, calls, opened: () => opened };
}

const USAGE = `usage: demo-api <command>
  serve [--port=N] [--host=H]   start the HTTP service (default port 4321)
  migrate                       bring the database schema up to date
  note [--times=N] TEXT         store TEXT N times (default 1)
  fail KIND                     fails inside the database (KIND: error or usage)
  echo ARGS...                  prints its arguments`;

describe('runCommandLine', () => {
  describe('before anything opens (the database is a closed port)', () => {
    let cli: ReturnType<typeof demoCli>;
    beforeAll(async () => {
      cli = demoCli({ url: `postgres://postgres@127.0.0.1:${await freePort()}/postgres`, schema: 'demo' });
    });

    test('no command, help, --help: the usage on stdout, exit 0', async () => {
      for (const argv of [[], ['help'], ['--help'], ['-h']])
        expect(await cli.run(...argv)).toEqual({ code: 0, stdout: USAGE, stderr: '' });
    });

    test('a command line that does not fit: the reason and the usage on stderr, exit 2, nothing run', async () => {
      const cases: [string[], string][] = [
        [['frobnicate'], 'unknown command: frobnicate'],
        [['note', '--verbose', 'x'], "note: Unknown option '--verbose'"],
        [['note', '--times'], "note: Option '--times <value>' argument missing"],
        [['note'], 'note takes 1 argument, not 0'],
        [['note', 'a', 'b'], 'note takes 1 argument, not 2'],
        [['migrate', 'now'], 'migrate takes no arguments'],
        [['serve', '--verbose'], "serve: Unknown option '--verbose'"],
      ];
      for (const [argv, reason] of cases) {
        const result = await cli.run(...argv);
        expect(result).toEqual({ code: 2, stdout: '', stderr: expect.stringContaining(`\n${USAGE}`) });
        expect(result.stderr.startsWith(reason)).toBe(true);
      }
      expect(cli.calls).toEqual({ loadConfig: 0, run: 0 });
    });

    test('a bad value is one line, exit 1: the config is not loaded, the database not opened', async () => {
      for (const times of ['-3', '0', 'abc', '1.5'])
        expect(await cli.run('note', `--times=${times}`, 'x')).toEqual({
          code: 1,
          stdout: '',
          stderr: '--times must be a positive integer',
        });
      expect(cli.calls.loadConfig).toBe(0);
      expect(cli.opened()).toBeUndefined();
    });

    test('a command without options takes every argument as positional, one with a dash too', async () => {
      expect(await cli.run('echo', '-3', '--x')).toEqual({ code: 0, stdout: '-3 --x', stderr: '' });
    });
  });

  describe('withDatabase', () => {
    const fresh = testDatabase('cli');
    const cli = demoCli(fresh.config);
    afterAll(() => fresh.cleanup());

    test('migrate applies the migrations once, then says the schema is up to date', async () => {
      expect(await cli.run('migrate')).toEqual({ code: 0, stdout: 'applied: 0001_notes', stderr: '' });
      expect(await cli.run('migrate')).toEqual({ code: 0, stdout: 'schema is up to date', stderr: '' });
    });

    test("a command's database is migrated, used, then closed", async () => {
      expect(await cli.run('note', '--times=2', 'hello')).toEqual({
        code: undefined,
        stdout: '2 stored',
        stderr: '',
      });
      await expect(cli.opened()!.db.selectFrom('notes').selectAll().execute()).rejects.toThrow();
    });

    test("an error inside is the error's message, exit 1, and the database is closed all the same", async () => {
      expect(await cli.run('fail', 'error')).toEqual({ code: 1, stdout: '', stderr: 'it broke\n  here' });
      await expect(cli.opened()!.db.selectFrom('notes').selectAll().execute()).rejects.toThrow();
      const usage = await cli.run('fail', 'usage');
      expect(usage.code).toBe(2);
      expect(usage.stderr).toBe(`fail: not like that\n${USAGE}`);
    });
  });
});
