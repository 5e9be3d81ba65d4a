// CI check of `npm start`: starts every built service through tools/dev/start.mjs (each on its
// default port with its embedded database), waits until each answers /readyz, loads the microblog
// panel, then stops them with Ctrl-C and expects a clean exit. Exit code 0 when all of that held.
import { spawn } from 'node:child_process';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..', '..');
const PORTS = { 'microblog-api': 8887, 'workspace-api': 8080, 'social-api': 5000 };
const child = spawn(process.execPath, [join(root, 'tools', 'dev', 'start.mjs')], { cwd: root, env: { ...process.env, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] });
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
const panel = await fetch('http://127.0.0.1:8887/').then((r) => r.text(), () => '');
if (!panel.includes('quest-post-form')) failures.push('the microblog panel did not load at /');
const docs = await fetch('http://127.0.0.1:5000/', { redirect: 'manual' }).then((r) => r.headers.get('location'), () => null);
if (docs !== '/docs') failures.push(`social-api / did not redirect to /docs (${docs})`);
const spec = await fetch('http://127.0.0.1:5000/apispec.json').then((r) => r.json(), () => ({}));
if (spec.info?.title !== 'Microblog API') failures.push('social-api did not serve its OpenAPI document at /apispec.json');

child.kill('SIGINT');
const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r('timeout'), 20_000))]);
if (code !== 0) failures.push(`npm start did not stop cleanly on Ctrl-C (${code})`);
if (failures.length) {
  console.error(failures.join('\n'));
  console.error(output.split('\n').slice(-40).join('\n'));
  if (code === 'timeout') child.kill('SIGKILL');
  process.exit(1);
}
console.log('npm start: every service ready, stopped cleanly');
