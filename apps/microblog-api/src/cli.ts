#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { migrateToLatest, openDatabase } from '@platform/db';
import { serve } from '@platform/http-kit';
import { buildApp } from './app';
import { loadConfig } from './config';
import type { MicroblogDatabase } from './db/schema';
import { migrations } from './db/migrations';
import { seedDemoData } from './posts/seed';

const USAGE = `usage: microblog-api <command>
  serve [--port=N]     start the HTTP service (default port 8887)
  migrate              bring the database schema up to date
  seed [--posts=N]     add N demo posts with replies and reactions (default 200)`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const { values } = parseArgs({
    args: rest,
    options: { port: { type: 'string' }, posts: { type: 'string' } },
    strict: true,
  });
  const config = loadConfig({ ...process.env, ...(values.port ? { PORT: values.port } : {}) });
  switch (command) {
    case 'serve': {
      await serve(buildApp, config);
      return -1; // keep running
    }
    case 'migrate':
    case 'seed': {
      const database = await openDatabase<MicroblogDatabase>(config.database);
      try {
        const applied = await migrateToLatest(database.db, database.schema, migrations);
        if (command === 'migrate') {
          console.log(applied.length ? `applied: ${applied.join(', ')}` : 'schema is up to date');
          return 0;
        }
        const count = Number(values.posts ?? 200);
        if (!Number.isInteger(count) || count < 1) throw new Error('--posts must be a positive integer');
        const added = await seedDemoData(database.db, count);
        console.log(`${added.posts} posts, ${added.replies} replies added.`);
        return 0;
      } finally {
        await database.close();
      }
    }
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
