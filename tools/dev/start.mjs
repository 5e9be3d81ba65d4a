// Starts every service that exists under apps/ (built to dist/), each on its default port, with
// readable logs. Without DATABASE_URL it first starts (or joins) the local PostgreSQL server of
// DATA_DIR (default .data/postgres), which the services, CLI commands and tests then share, each in
// its own schema. Ctrl-C (or SIGTERM) stops the services gracefully, then that server (unless some
// other process, a seed or a test run, still uses it: the last one to leave stops it).
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..', '..');
const only = process.argv.slice(2);
const apps = readdirSync(join(root, 'apps'))
  .filter((name) => existsSync(join(root, 'apps', name, 'package.json')))
  .filter((name) => only.length === 0 || only.includes(name));

const missing = apps.filter((name) => !existsSync(join(root, 'apps', name, 'dist', 'main.js')));
if (missing.length) {
  console.error(`not built: ${missing.join(', ')} — run \`npx nx run-many -t build\` first (npm start does)`);
  process.exit(1);
}

const dbLabel = `\x1b[90m${'postgres'.padEnd(14)}\x1b[0m │ `;
let localServer;
if (!process.env.DATABASE_URL) {
  const { default: db } = await import('@platform/db');
  const { default: local } = await import('@platform/db/local');
  const port = process.env.LOCAL_PG_PORT ? Number(process.env.LOCAL_PG_PORT) : undefined;
  try {
    localServer = await local.ensureLocalServer({ dataDir: db.localDataDir(process.env.DATA_DIR), port });
  } catch (error) {
    console.error(`${dbLabel}${error.message}`);
    process.exit(1);
  }
  process.stdout.write(
    `${dbLabel}PostgreSQL ${local.LOCAL_PG_MAJOR} ${localServer.started ? 'started' : 'already running'} on 127.0.0.1:${localServer.port} (data: ${localServer.dataDir})\n`,
  );
}

const colours = [36, 35, 33, 32, 34];
const children = apps.map((name, i) => {
  const label = `\x1b[${colours[i % colours.length]}m${name.padEnd(14)}\x1b[0m │ `;
  const child = spawn(process.execPath, [join('apps', name, 'dist', 'main.js')], {
    cwd: root,
    // Pretty logs: one line per request. The service writes into a pipe, so it colours its lines
    // only when told this launcher's terminal can show colours.
    env: { LOG_FORMAT: 'pretty', ...(process.stdout.isTTY ? { FORCE_COLOR: '1' } : {}), ...process.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group: a terminal's Ctrl-C reaches this launcher only, which then asks each
    // service once (a second signal would make a service skip its graceful shutdown).
    detached: true,
  });
  const prefix = (stream, out) => {
    let rest = '';
    stream.on('data', (chunk) => {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop();
      for (const line of lines) out.write(label + line + '\n');
    });
  };
  prefix(child.stdout, process.stdout);
  prefix(child.stderr, process.stderr);
  child.on('exit', (code, signal) => {
    process.stdout.write(`${label}exited (${signal ?? code})\n`);
    if (!stopping && code !== 0) stop('SIGTERM', 1);
  });
  const { description } = JSON.parse(readFileSync(join(root, 'apps', name, 'package.json'), 'utf8'));
  process.stdout.write(`${label}starting: ${description ?? ''}\n`);
  return child;
});

let stopping = false;
let exitCode = 0;
function stop(signal, code = 0) {
  if (stopping) return;
  stopping = true;
  exitCode = code;
  for (const child of children) if (child.exitCode === null) child.kill(signal);
}
process.on('SIGINT', () => stop('SIGTERM'));
process.on('SIGTERM', () => stop('SIGTERM'));
await Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r() : c.on('exit', r)))));
if (localServer) {
  const { stopped } = await localServer.release();
  process.stdout.write(`${dbLabel}${stopped ? 'stopped' : 'left running: other processes still use it'}\n`);
}
process.exit(exitCode);
