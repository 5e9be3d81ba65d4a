#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { migrateToLatest, openDatabase, type Database } from '@platform/db';
import { serve } from '@platform/http-kit';
import { loadConfig, type Config } from './config';
import type { SocialDatabase } from './db/schema';
import { migrations } from './db/migrations';
import { FAKE_USAGE, fakeCommand, isFakeKind, parseCount } from './fake';

const USAGE = `usage: social-api <command>
  serve [--port=N] [--host=H]   start the HTTP service (default port 5000)
  migrate                       bring the database schema up to date
${FAKE_USAGE}`;

/** A command line that does not match any command: the usage on stderr, exit code 2. */
class UsageError extends Error {}

async function withDatabase<T>(
  config: Config,
  run: (database: Database<SocialDatabase>, applied: string[]) => Promise<T>,
): Promise<T> {
  const database = await openDatabase<SocialDatabase>(config.database);
  try {
    const applied = await migrateToLatest(database.db, database.schema, migrations);
    return await run(database, applied);
  } finally {
    await database.close();
  }
}

function serveOptions(args: string[]): { port?: string; host?: string } {
  try {
    return parseArgs({ args, options: { port: { type: 'string' }, host: { type: 'string' } }, strict: true })
      .values;
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const out = (line: string) => console.log(line);
  switch (command) {
    case 'serve': {
      const { port, host } = serveOptions(rest);
      // Loaded here only: the other commands start without the HTTP stack.
      const { buildApp } = await import('./app.js');
      await serve(
        buildApp,
        loadConfig({
          ...process.env,
          ...(port !== undefined ? { PORT: port } : {}),
          ...(host !== undefined ? { HOST: host } : {}),
        }),
      );
      return -1; // keeps running until SIGTERM/SIGINT
    }
    case 'migrate':
      if (rest.length) throw new UsageError('migrate takes no arguments');
      return withDatabase(loadConfig(), async (_database, applied) => {
        out(applied.length ? `applied: ${applied.join(', ')}` : 'schema is up to date');
        return 0;
      });
    case 'fake': {
      const [kind, count, ...extra] = rest;
      if (!isFakeKind(kind) || count === undefined || extra.length)
        throw new UsageError('fake takes users or posts and a count');
      // Checked before the database is opened: a bad count changes nothing.
      const n = parseCount(kind, count);
      return withDatabase(loadConfig(), (database) => fakeCommand(database.db, kind, n, out));
    }
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      out(USAGE);
      return 0;
    default:
      throw new UsageError(`unknown command: ${command}`);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (error) => {
    if (error instanceof UsageError) {
      console.error(`${error.message}\n${USAGE}`);
      process.exitCode = 2;
      return;
    }
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  },
);
