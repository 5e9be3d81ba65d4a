#!/usr/bin/env node
import { runCli } from '@platform/http-kit';
import { loadConfig } from './config';
import { migrations } from './db/migrations';
import { seedDemoData } from './seed';

runCli({
  name: 'microblog-api',
  loadConfig,
  loadApp: () => import('./app.js'),
  migrations,
  commands: {
    seed: {
      usage: '  seed [--posts=N]              add N demo posts with replies and reactions (default 200)',
      options: { posts: { type: 'string', default: '200' } },
      async run({ values }, { withDatabase, out }) {
        const count = Number(values.posts);
        if (!Number.isInteger(count) || count < 1) throw new Error('--posts must be a positive integer');
        const added = await withDatabase((database) => seedDemoData(database.db, count));
        out(`${added.posts} posts, ${added.replies} replies added.`);
      },
    },
  },
});
