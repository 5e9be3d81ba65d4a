#!/usr/bin/env node
import { resolve } from 'node:path';
import { runCli, UsageError } from '@platform/http-kit';
import { keysCommand, KEYS_USAGE, parseKeysArguments } from './auth/cli';
import { loadConfig } from './config';
import { migrations } from './db/migrations';
import { registryCommand, REGISTRY_USAGE } from './images/cli';
import { seedCommand, seedCounts, SEED_USAGE } from './seed';

// Each command checks its arguments before `withDatabase`: a bad one opens and changes nothing.
runCli({
  name: 'workspace-api',
  loadConfig,
  loadApp: () => import('./app.js'),
  migrations,
  commands: {
    keys: {
      usage: KEYS_USAGE,
      options: {
        name: { type: 'string' },
        permission: { type: 'string', multiple: true },
        'read-only': { type: 'boolean' },
        expires: { type: 'string' },
      },
      positionals: { min: 1, max: 2 },
      run({ values, positionals: [sub, ...rest] }, { withDatabase, out }) {
        parseKeysArguments(sub, values, rest);
        return withDatabase((database) => keysCommand(database.db, sub, values, rest, out));
      },
    },
    registry: {
      usage: REGISTRY_USAGE,
      positionals: { min: 2 },
      run({ positionals: [sub, path] }, { withDatabase, out }) {
        if (sub !== 'import') throw new UsageError(`registry takes import, not ${sub}`);
        // The path is the user's: npm runs workspace scripts in the app folder but says where it was called.
        const file = resolve(process.env.INIT_CWD ?? process.cwd(), path);
        return withDatabase((database) => registryCommand(database.db, sub, [file], out));
      },
    },
    seed: {
      usage: SEED_USAGE,
      options: { users: { type: 'string' }, groups: { type: 'string' } },
      run({ values }, cli) {
        seedCounts(values);
        return cli.withDatabase((database) => seedCommand(database.db, cli.config, values, cli.out));
      },
    },
  },
});
