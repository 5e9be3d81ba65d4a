#!/usr/bin/env node
import { runCli, UsageError } from '@platform/http-kit';
import { loadConfig } from './config';
import { repairCounters } from './db/counters';
import { migrations } from './db/migrations';
import { repairPositions } from './db/positions';
import { FAKE_USAGE, fakeCommand, isFakeKind, parseCount } from './seed';

/** `n thing(s)`. */
const count = (n: number, thing: string) => `${n} ${thing}${n === 1 ? '' : 's'}`;

runCli({
  name: 'social-api',
  loadConfig,
  loadApp: () => import('./app.js'),
  migrations,
  commands: {
    fake: {
      usage: FAKE_USAGE,
      positionals: { min: 2 },
      run({ positionals: [kind, count] }, { withDatabase, out }) {
        if (!isFakeKind(kind)) throw new UsageError('fake takes users or posts and a count');
        const n = parseCount(kind, count);
        return withDatabase((database) => fakeCommand(database.db, kind, n, out));
      },
    },
    'repair-counters': {
      usage:
        '  repair-counters               recompute the posts, followers and total counters from count(*)',
      run: (_args, { withDatabase, out }) =>
        withDatabase(async (database) => {
          const repaired = await repairCounters(database.db);
          out(
            `Counters repaired: ${count(repaired.users, 'user')}, totals ${repaired.totals ? 'repaired' : 'were right'}.`,
          );
          return 0;
        }),
    },
    'repair-positions': {
      usage:
        '  repair-positions              rebuild what pages find positions with (post and user buckets, feed weeks, follow names)',
      run: (_args, { withDatabase, out }) =>
        withDatabase(async (database) => {
          const repaired = await repairPositions(database.db);
          out(
            `Positions repaired: ${count(repaired.wrong, 'wrong bucket')} found, ${repaired.buckets} now; ${count(repaired.feedWeeks, 'wrong feed week')}; ${count(repaired.follows, 'follow')} renamed.`,
          );
          return 0;
        }),
    },
  },
});
