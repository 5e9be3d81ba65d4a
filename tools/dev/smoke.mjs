// CI check of `npm start`: starts every built service through tools/dev/start.mjs (each on its
// default port, on the local PostgreSQL server unless DATABASE_URL is set), waits until each answers
// /readyz, loads the microblog panel (its page and the script the build bundled), then presses
// Ctrl-C the way a terminal does (SIGINT to the whole process group) and expects every service to
// stop gracefully, then the database server.
// Exit code 0 when all of that held.
import { spawn } from 'node:child_process';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..', '..');
const PORTS = { 'microblog-api': 8887, 'workspace-api': 8080, 'social-api': 5000 };
const child = spawn(process.execPath, [join(root, 'tools', 'dev', 'start.mjs')], {
  cwd: root,
  env: { ...process.env, LOG_LEVEL: 'warn' },
  stdio: ['ignore', 'pipe', 'pipe'],
  detached: true,
});
let output = '';
child.stdout.on('data', (c) => (output += c));
child.stderr.on('data', (c) => (output += c));
const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal)));

async function ready(port, deadline) {
  while (Date.now() < deadline) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/readyz`)).ok) return true;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  return false;
}

const failures = [];
const deadline = Date.now() + 90_000;
for (const [name, port] of Object.entries(PORTS)) {
  if (await ready(port, deadline)) console.log(`${name} ready on ${port}`);
  else failures.push(`${name} not ready on ${port}`);
}
const panel = await fetch('http://127.0.0.1:8887/').then(
  (r) => r.text(),
  () => '',
);
if (!panel.includes('quest-post-form')) failures.push('the microblog panel did not load at /');
// Its script: the bundle the build wrote (esbuild, from apps/microblog-api/panel/src).
const script = await fetch('http://127.0.0.1:8887/panel.js').then(
  (r) => (r.ok ? r.text() : ''),
  () => '',
);
if (!script.startsWith('/* microblog panel: bundled by esbuild'))
  failures.push('the microblog panel’s script (/panel.js, bundled by the build) did not load');
const docs = await fetch('http://127.0.0.1:5000/', { redirect: 'manual' }).then(
  (r) => r.headers.get('location'),
  () => null,
);
if (docs !== '/docs') failures.push(`social-api / did not redirect to /docs (${docs})`);
const spec = await fetch('http://127.0.0.1:5000/apispec.json').then(
  (r) => r.json(),
  () => ({}),
);
if (spec.info?.title !== 'Microblog API')
  failures.push('social-api did not serve its OpenAPI document at /apispec.json');

const started = Date.now();
process.kill(-child.pid, 'SIGINT'); // the terminal's Ctrl-C: the launcher's whole process group
const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r('timeout'), 20_000))]);
if (code !== 0) failures.push(`npm start did not stop cleanly on Ctrl-C (${code})`);
const plain = output.replace(/\x1b\[[0-9;]*m/g, '');
const exits = [...plain.matchAll(/exited \(([^)]+)\)/g)].map((m) => m[1]);
if (exits.length !== Object.keys(PORTS).length || exits.some((e) => e !== '0'))
  failures.push(`every service should exit 0 after Ctrl-C, got: ${exits.join(', ')}`);
if (!process.env.DATABASE_URL && !/postgres +│ stopped/.test(plain))
  failures.push('the local PostgreSQL was not stopped after the services');
console.log(`stopped in ${Date.now() - started} ms`);
if (failures.length) {
  console.error(failures.join('\n'));
  console.error(output.split('\n').slice(-40).join('\n'));
  if (code === 'timeout') child.kill('SIGKILL');
  process.exit(1);
}
console.log('npm start: every service ready, stopped cleanly');
