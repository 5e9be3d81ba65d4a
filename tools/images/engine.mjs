// A Docker engine for images:base, images:build and the compose test (CI runs as root on Debian).
//   node tools/images/engine.mjs ensure   install docker.io + docker-compose when missing, start dockerd
//                                          in the background when no engine answers (`docker version`)
//   node tools/images/engine.mjs stop     stop the dockerd that `ensure` started (by its recorded pid), if any
// An engine that was already running is used as it is and never stopped.
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { aptInstall, capture, commandExists, DOCKER, ensureCacheDir, log } from './lib.mjs';

const PID_FILE = () => join(ensureCacheDir(), 'dockerd.pid');
const LOG_FILE = () => join(ensureCacheDir(), 'dockerd.log');

const engineAnswers = () => capture(DOCKER, ['version', '--format', '{{.Server.Version}}']);

const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function ensure() {
  const missing = [];
  if (!existsSync('/usr/bin/docker') || !commandExists('dockerd')) missing.push('docker.io');
  if (!commandExists('docker-compose')) missing.push('docker-compose');
  if (missing.length) await aptInstall(missing);

  const before = engineAnswers();
  if (before.ok) {
    log(`Docker engine ${before.stdout.trim()} is running`);
    return;
  }
  if (process.getuid?.() !== 0) {
    throw new Error(
      `no Docker engine answers and only root can start dockerd here:\n${before.stderr.trim()}`,
    );
  }
  // dockerd's own pid file: one already running (started by someone else) that does not answer this client.
  const running = existsSync('/var/run/docker.pid') ? Number(readFileSync('/var/run/docker.pid', 'utf8')) : 0;
  if (running > 0 && alive(running)) {
    throw new Error(
      `dockerd (pid ${running}) is running but does not answer (DOCKER_HOST?):\n${before.stderr.trim()}`,
    );
  }
  const logFd = openSync(LOG_FILE(), 'a');
  const dockerd = spawn('dockerd', [], { detached: true, stdio: ['ignore', logFd, logFd] });
  closeSync(logFd);
  dockerd.unref();
  log(`started dockerd (pid ${dockerd.pid}, log ${LOG_FILE()})`);
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (!alive(dockerd.pid)) break;
    const answer = engineAnswers();
    if (answer.ok) {
      writeFileSync(PID_FILE(), `${dockerd.pid}\n`); // for `stop`: this one only
      log(`Docker engine ${answer.stdout.trim()} is running`);
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  if (alive(dockerd.pid)) writeFileSync(PID_FILE(), `${dockerd.pid}\n`);
  const tail = readFileSync(LOG_FILE(), 'utf8').split('\n').slice(-20).join('\n');
  throw new Error(`dockerd did not come up within 60 s; the end of ${LOG_FILE()}:\n${tail}`);
}

async function stop() {
  if (!existsSync(PID_FILE())) {
    log('no dockerd was started by this tool: nothing to stop');
    return;
  }
  const pid = Number(readFileSync(PID_FILE(), 'utf8').trim());
  rmSync(PID_FILE());
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) {
    log(`dockerd ${pid} is not running`);
    return;
  }
  process.kill(pid, 'SIGTERM'); // dockerd stops its containers and containerd, then exits
  const deadline = Date.now() + 30_000;
  while (alive(pid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 250));
  log(alive(pid) ? `dockerd ${pid} still running after 30 s` : `stopped dockerd ${pid}`);
}

const command = process.argv[2] ?? 'ensure';
const actions = { ensure, stop };
if (!actions[command]) {
  console.error('usage: node tools/images/engine.mjs ensure|stop');
  process.exit(2);
}
actions[command]().catch((error) => {
  console.error(`[images] ${error.message}`);
  process.exit(1);
});
