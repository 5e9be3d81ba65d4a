import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { freePort, testDatabase } from '@platform/db/testing';
import { childProcessEnv } from '@platform/testing';

const run = promisify(execFile);
const APP_DIR = resolve(__dirname, '..');
// Node itself with tsx's loader: the pid is the service's own, so SIGTERM reaches it.
const NODE_ARGS = ['--import', 'tsx', '--conditions=@platform/source', 'src/cli.ts'];

interface LogLine {
  level: number;
  msg: string;
  apiKey?: string;
  apiKeySecret?: string;
}

/**
 * The bootstrap key as an operator meets it: `serve` started with only BOOTSTRAP_API_KEY (the secret
 * generated and printed once), `keys disable` from the command line, restarts. Real processes on a
 * fresh schema of the test PostgreSQL.
 */
describe('the bootstrap key across restarts', () => {
  const fresh = testDatabase('workspace');
  const env = childProcessEnv(fresh.config, {
    LOG_LEVEL: 'info',
    BOOTSTRAP_API_KEY: 'OpsBootKey',
    ARGON2_MEMORY_KIB: '1024',
    ARGON2_TIME_COST: '1',
  });
  const children: ChildProcess[] = [];
  afterAll(async () => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    await fresh.cleanup();
  });

  /** Runs `serve` until it is ready, then stops it (SIGTERM): the log lines it wrote and what `during` saw. */
  async function serveOnce<T>(
    extraEnv: Record<string, string>,
    during: (port: number) => Promise<T>,
  ): Promise<{ logs: LogLine[]; result: T }> {
    const port = await freePort();
    const child = spawn(process.execPath, [...NODE_ARGS, 'serve', `--port=${port}`], {
      cwd: APP_DIR,
      env: { ...env, ...extraEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (c) => (stdout += c));
    child.stderr!.on('data', (c) => (stderr += c));
    const exited = new Promise((done) => child.once('exit', done));
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`serve exited (${child.exitCode}): ${stderr}${stdout}`);
      if (Date.now() > deadline) throw new Error(`serve did not become ready: ${stderr}${stdout}`);
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ready) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    try {
      return {
        result: await during(port),
        logs: stdout
          .split('\n')
          .filter((line) => line.startsWith('{'))
          .map((line) => JSON.parse(line) as LogLine),
      };
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  }

  const validate = async (port: number, apiKey: string, secret: string) => {
    const r = await fetch(`http://127.0.0.1:${port}/api/public/validate_credentials`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ api_key: apiKey, api_key_secret: secret }),
    });
    return { status: r.status, body: (await r.json()) as unknown };
  };

  let secret = '';

  test('first start: the key is created with a generated secret, printed once in the log, and works', async () => {
    const first = await serveOnce({}, async () => undefined);
    const printed = first.logs.filter((l) => l.apiKeySecret);
    expect(printed).toHaveLength(1);
    expect(printed[0]).toMatchObject({ level: 40, apiKey: 'OpsBootKey' });
    secret = printed[0].apiKeySecret!;
    expect(secret).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(printed[0].msg).toContain(secret);

    const second = await serveOnce({}, (port) => validate(port, 'OpsBootKey', secret));
    expect(second.result).toEqual({ status: 200, body: {} });
    expect(second.logs.filter((l) => l.apiKeySecret || l.msg.includes(secret))).toEqual([]);
  }, 90_000);

  test('`keys disable` holds across a restart: the key stays disabled and the start warns so', async () => {
    expect(secret).not.toBe('');
    const cli = await run(process.execPath, [...NODE_ARGS, 'keys', 'disable', 'OpsBootKey'], {
      cwd: APP_DIR,
      env,
    });
    expect(cli.stdout).toContain('disabled OpsBootKey');

    // Restarted with a secret in the environment too: neither re-enables nor re-keys it.
    const other = randomBytes(24).toString('base64url');
    const restarted = await serveOnce({ BOOTSTRAP_API_KEY_SECRET: other }, async (port) => [
      await validate(port, 'OpsBootKey', secret),
      await validate(port, 'OpsBootKey', other),
    ]);
    expect(restarted.result).toEqual([
      { status: 403, body: { error_message: 'Access Denied' } },
      { status: 403, body: { error_message: 'Access Denied' } },
    ]);
    const warnings = restarted.logs.filter((l) => l.level === 40).map((l) => l.msg);
    expect(warnings).toEqual([
      expect.stringMatching(/^bootstrap key OpsBootKey is disabled and stays disabled/),
      expect.stringMatching(/^BOOTSTRAP_API_KEY_SECRET is not the secret of the existing key OpsBootKey/),
    ]);
    const list = await run(process.execPath, [...NODE_ARGS, 'keys', 'list'], { cwd: APP_DIR, env });
    expect(list.stdout).toMatch(/^OpsBootKey {2}bootstrap {2}\[disabled\] {2}Global Admin$/m);
  }, 90_000);
});
