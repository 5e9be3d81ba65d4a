#!/usr/bin/env node
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { migrateToLatest, openDatabase, type Database } from '@platform/db';
import { serve } from '@platform/http-kit';
import { buildApp } from './app';
import { keysCommand, KEYS_USAGE } from './auth/cli';
import { loadConfig, type Config } from './config';
import type { WorkspaceDatabase } from './db/schema';
import { migrations } from './db/migrations';
import { registryCommand, REGISTRY_USAGE } from './images/cli';
import { seedCommand, SEED_USAGE } from './seed';

const USAGE = `usage: workspace-api <command>
  serve [--port=N] [--host=H]   start the HTTP service (default port 8080)
  migrate                       bring the database schema up to date
${KEYS_USAGE}
${REGISTRY_USAGE}
${SEED_USAGE}`;

async function withDatabase<T>(
  config: Config,
  run: (db: Database<WorkspaceDatabase>, applied: string[]) => Promise<T>,
): Promise<T> {
  const database = await openDatabase<WorkspaceDatabase>(config.database);
  try {
    const applied = await migrateToLatest(database.db, database.schema, migrations);
    return await run(database, applied);
  } finally {
    await database.close();
  }
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      name: { type: 'string' },
      permission: { type: 'string', multiple: true },
      'read-only': { type: 'boolean' },
      expires: { type: 'string' },
      users: { type: 'string' },
      groups: { type: 'string' },
    },
  });
  const config = loadConfig({
    ...process.env,
    ...(values.port ? { PORT: values.port } : {}),
    ...(values.host ? { HOST: values.host } : {}),
  });
  const out = (line: string) => console.log(line);
  switch (command) {
    case 'serve': {
      await serve(buildApp, config);
      return -1; // keeps running
    }
    case 'migrate':
      return withDatabase(config, async (_d, applied) => {
        out(applied.length ? `applied: ${applied.join(', ')}` : 'schema is up to date');
        return 0;
      });
    case 'keys':
      return withDatabase(config, (d) =>
        keysCommand(d.db, positionals[0], values, positionals.slice(1), out),
      );
    case 'registry': {
      // Paths are the user's: npm runs workspace scripts in the app folder but says where it was called.
      const files = positionals.slice(1).map((p) => resolve(process.env.INIT_CWD ?? process.cwd(), p));
      return withDatabase(config, (d) => registryCommand(d.db, positionals[0], files, out));
    }
    case 'seed':
      return withDatabase(config, (d) =>
        seedCommand(d.db, config, { users: values.users, groups: values.groups }, out),
      );
    default:
      console.error(USAGE);
      return command ? 2 : 0;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (error) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  },
);
