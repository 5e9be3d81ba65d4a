import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, closeSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The compose stack, for real, on a Docker engine: builds every service image with the root Dockerfile
 * (`npm run images:build`), starts docker-compose.yml, waits for every healthcheck, and talks to each
 * service through its published port. Needs an engine and the local base images (`.ci/run` prepares
 * both: tools/images/engine.mjs, images:base). Without an engine this fails, saying how to get one.
 * A system test (`npm run test:system`, which .ci/run runs): `npm test` leaves it out, since it needs an engine.
 */

const ROOT = join(__dirname, '..', '..', '..');
const DOCKER = existsSync('/usr/bin/docker') ? '/usr/bin/docker' : 'docker';
const SERVICES = {
  'microblog-api': { schema: 'microblog', portVar: 'MICROBLOG_PORT' },
  'workspace-api': { schema: 'workspace', portVar: 'WORKSPACE_PORT' },
  'social-api': { schema: 'social', portVar: 'SOCIAL_PORT' },
} as const;
type Service = keyof typeof SERVICES;
const APPS = Object.keys(SERVICES) as Service[];
/** Each service's image may add at most this much to the Node base image (issue #13). */
const MAX_ABOVE_BASE = 100e6;
/** A project name of its own: its containers, network and volume never meet a developer's stack. */
const PROJECT = `platformcomposetest${process.pid}`;

interface BuildReport {
  base: { image: string; bytes: number };
  totalSeconds: number;
  images: { service: string; image: string; buildSeconds: number; bytes: number; aboveBaseBytes: number }[];
}

const run = (command: string, args: string[], env: NodeJS.ProcessEnv = {}) => {
  const result = spawnSync(command, args, {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, ...env },
    timeout: 180_000,
    maxBuffer: 32 * 1024 * 1024,
  });
  return {
    ok: result.status === 0,
    stdout: result.stdout ?? '',
    stderr: result.stderr ?? String(result.error ?? ''),
  };
};

/** Like `run`, throwing with the command's output when it fails. */
const must = (command: string, args: string[], env: NodeJS.ProcessEnv = {}) => {
  const result = run(command, args, env);
  if (!result.ok) throw new Error(`${command} ${args.join(' ')} failed:\n${result.stderr}\n${result.stdout}`);
  return result.stdout;
};

/** A long command with its output in a log file (the build prints thousands of lines), its tail on failure. */
function runLogged(command: string, args: string[], logFile: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const fd = openSync(logFile, 'w');
    const child = spawn(command, args, { cwd: ROOT, stdio: ['ignore', fd, fd] });
    child.on('exit', (code) => {
      closeSync(fd);
      if (code === 0) return resolve();
      const tail = readFileSync(logFile, 'utf8').split('\n').slice(-60).join('\n');
      reject(new Error(`${command} ${args.join(' ')} exited with ${code}:\n${tail}`));
    });
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '0.0.0.0', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Debian's docker-compose 1.29 when installed, else the v2 plugin. */
function composeCommand(): [string, string[]] {
  if (run('docker-compose', ['version']).ok) return ['docker-compose', []];
  return [DOCKER, ['compose']];
}

/** A response's JSON body, as the contracts describe it (checked field by field below). */
const json = (response: Response): Promise<any> => response.json();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const elapsed = (since: number) => Math.round((Date.now() - since) / 100) / 10;

const engine = run(DOCKER, ['version', '--format', '{{.Server.Version}}']);

describe('docker-compose.yml on a real engine', () => {
  const ports = {} as Record<Service, number>;
  const [composeBin, composePre] = composeCommand();
  let composeEnv: NodeJS.ProcessEnv = {};
  const compose = (...args: string[]) =>
    must(composeBin, [...composePre, '-p', PROJECT, '-f', 'docker-compose.yml', ...args], composeEnv);
  const containerOf = (service: string) => compose('ps', '-q', service).trim();
  /** The rows of `query` (psql in the postgres container as the platform user, unaligned). */
  const psql = (query: string) =>
    compose('exec', '-T', 'postgres', 'psql', '-U', 'platform', '-d', 'platform', '-At', '-c', query).trim();
  const url = (service: Service, path: string) => `http://127.0.0.1:${ports[service]}${path}`;
  const logDir = mkdtempSync(join(tmpdir(), 'compose-test-'));
  const figures: string[] = [];
  let report: BuildReport;
  let started = false;

  const health = (container: string) =>
    must(DOCKER, [
      'inspect',
      '--format',
      '{{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}}',
      container,
    ]).trim();

  async function waitHealthy(services: string[], timeoutMs: number): Promise<Record<string, string>> {
    const deadline = Date.now() + timeoutMs;
    let status: Record<string, string> = {};
    while (Date.now() < deadline) {
      status = Object.fromEntries(services.map((s) => [s, health(containerOf(s))]));
      if (Object.values(status).every((s) => s === 'healthy')) return status;
      if (Object.values(status).includes('unhealthy')) break;
      await sleep(1000);
    }
    return status;
  }

  beforeAll(async () => {
    if (!engine.ok) {
      throw new Error(
        `No Docker engine answers \`${DOCKER} info\` (${engine.stderr.trim()}). ` +
          'Start one with `node tools/images/engine.mjs ensure` (as root: installs docker.io and starts dockerd), ' +
          'then `npm run images:base`.',
      );
    }
    const postgresImage = 'postgres:15'; // made by images:base where Docker Hub cannot be reached
    if (!run(DOCKER, ['image', 'inspect', postgresImage]).ok) {
      throw new Error(`No ${postgresImage} image: run \`npm run images:base\` first.`);
    }
    for (const app of APPS) ports[app] = await freePort();
    composeEnv = Object.fromEntries(APPS.map((app) => [SERVICES[app].portVar, String(ports[app])]));

    // images:build, as .ci/run and a person run it (warm: every layer comes from BuildKit's cache).
    const reportFile = join(logDir, 'build-report.json');
    const buildStart = Date.now();
    await runLogged(
      process.execPath,
      ['tools/images/build.mjs', `--report=${reportFile}`],
      join(logDir, 'build.log'),
    );
    report = JSON.parse(readFileSync(reportFile, 'utf8'));
    figures.push(`images:build ${elapsed(buildStart)} s`);

    started = true;
    const upStart = Date.now();
    compose('up', '-d', '--no-build');
    const status = await waitHealthy(['postgres', ...APPS], 180_000);
    figures.push(`compose up → every healthcheck healthy ${elapsed(upStart)} s`);
    if (!Object.values(status).every((s) => s === 'healthy')) {
      throw new Error(
        `not healthy: ${JSON.stringify(status)}\n${run(composeBin, [...composePre, '-p', PROJECT, 'logs', '--tail=40'], composeEnv).stdout}`,
      );
    }
  }, 1_200_000);

  afterAll(() => {
    if (started) {
      const down = Date.now();
      const result = run(
        composeBin,
        [...composePre, '-p', PROJECT, '-f', 'docker-compose.yml', 'down', '-v', '--remove-orphans'],
        composeEnv,
      );
      figures.push(
        `compose down -v ${elapsed(down)} s${result.ok ? '' : ` (failed: ${result.stderr.trim()})`}`,
      );
    }
    rmSync(logDir, { recursive: true, force: true });
    if (report) {
      const mb = (b: number) => `${(b / 1e6).toFixed(1)} MB`;
      figures.unshift(
        `base ${report.base.image} ${mb(report.base.bytes)}`,
        ...report.images.map(
          (i) =>
            `${i.image}: ${mb(i.bytes)}, ${mb(i.aboveBaseBytes)} above the base, build ${i.buildSeconds} s`,
        ),
      );
    }
    console.log(`compose stack figures:\n  ${figures.join('\n  ')}`);
  }, 120_000);

  it('builds every service image from the root Dockerfile, each at most 100 MB above the Node base', () => {
    expect(report.images.map((i) => i.service).sort()).toEqual([...APPS].sort());
    for (const image of report.images) {
      const config = JSON.parse(
        must(DOCKER, ['image', 'inspect', '--format', '{{json .Config}}', image.image]),
      );
      expect(config.Env).toContain(`SERVICE=${image.service}`);
      expect(image.aboveBaseBytes).toBeGreaterThan(0);
      expect({ image: image.image, aboveBase: image.aboveBaseBytes <= MAX_ABOVE_BASE }).toEqual({
        image: image.image,
        aboveBase: true,
      });
    }
  });

  it('runs the images images:build made, and reports every healthcheck healthy', () => {
    for (const app of APPS) {
      const container = containerOf(app);
      const image = must(DOCKER, ['inspect', '--format', '{{.Image}}', container]).trim();
      expect(image).toBe(must(DOCKER, ['image', 'inspect', '--format', '{{.Id}}', `platform/${app}`]).trim());
      expect(health(container)).toBe('healthy');
    }
    expect(health(containerOf('postgres'))).toBe('healthy');
  });

  it('microblog-api: a post written through the published port reads back; /docs and the panel load', async () => {
    const content = `compose test ${PROJECT}`;
    const created = await fetch(url('microblog-api', '/api/microblog'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ content, quest_topic: 'online_safety', student_name: 'Compose' }),
    });
    expect(created.status).toBe(201);
    const post = await json(created);
    const list = await fetch(url('microblog-api', '/api/microblog?limit=5'));
    expect(list.status).toBe(200);
    expect((await json(list)).find((p: { id: number }) => p.id === post.id)).toMatchObject({ content });
    const docs = await fetch(url('microblog-api', '/docs'));
    expect(docs.status).toBe(200);
    expect(await docs.text()).toContain('swagger');
    // The panel's script, bundled from TypeScript by the image's build (esbuild is not in the image).
    const script = await fetch(url('microblog-api', '/panel.js'));
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toMatch(/javascript/);
    expect(await script.text()).toMatch(/^\/\* microblog panel: bundled by esbuild/);
  });

  /** compose's bootstrap admin key: its name from the compose file, its secret from the log (printed once). */
  const bootstrap = { api_key: '', api_key_secret: '' };
  const callWorkspace = (operation: string, body: object) =>
    fetch(url('workspace-api', `/api/public/${operation}`), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...bootstrap, ...body }),
    });

  it('publishes every port on 127.0.0.1 only: not on another address of this host, postgres not at all', async () => {
    for (const app of APPS) {
      const bindings = must(DOCKER, ['port', containerOf(app)])
        .trim()
        .split('\n');
      expect({ app, bindings }).toEqual({ app, bindings: [expect.stringMatching(/ -> 127\.0\.0\.1:\d+$/)] });
    }
    expect(must(DOCKER, ['port', containerOf('postgres')]).trim()).toBe('');
    // Through an address of this host that is not loopback, nothing answers on the published ports.
    const external = Object.values(networkInterfaces())
      .flat()
      .find((i) => i && i.family === 'IPv4' && !i.internal)?.address;
    expect(external).toBeDefined();
    for (const app of APPS) {
      const reached = await fetch(`http://${external}:${ports[app]}/healthz`).then(
        () => true,
        () => false,
      );
      expect({ app, external, reached }).toEqual({ app, external, reached: false });
      expect((await fetch(url(app, '/healthz'))).status).toBe(200);
    }
  });

  it("workspace-api: a user created with compose's bootstrap admin key reads back; /docs loads", async () => {
    const composeFile = readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8');
    bootstrap.api_key = /BOOTSTRAP_API_KEY: \$\{[A-Z_]+:-([^}]+)\}/.exec(composeFile)?.[1] ?? '';
    // No secret is shipped: the first start generated one and printed it once.
    const printed = compose('logs', '--no-color', 'workspace-api')
      .split('\n')
      .map((line) => /"apiKeySecret":"([A-Za-z0-9]+)"/.exec(line)?.[1])
      .filter(Boolean);
    expect(printed).toHaveLength(1);
    bootstrap.api_key_secret = printed[0]!;
    expect(bootstrap.api_key).toMatch(/^[A-Za-z0-9]+$/);
    expect(bootstrap.api_key_secret).toMatch(/^[A-Za-z0-9]{32}$/);
    const call = callWorkspace;
    const created = await call('create_user', {
      target_user: { username: 'Compose.User', password: 'Pa55word!' },
    });
    expect(created.status).toBe(200);
    const { user } = await json(created);
    expect(user.username).toBe('compose.user');
    const read = await call('get_user', { target_user: { username: 'compose.user' } });
    expect(read.status).toBe(200);
    expect((await json(read)).user.user_id).toBe(user.user_id);
    const docs = await fetch(url('workspace-api', '/docs'));
    expect(docs.status).toBe(200);
  });

  it('workspace-api in production mode (the image) refuses the old public bootstrap secret and does not start', () => {
    const refused = run(
      composeBin,
      [...composePre, '-p', PROJECT, '-f', 'docker-compose.yml', 'run', '--rm', '--no-deps', 'workspace-api'],
      { ...composeEnv, WORKSPACE_BOOTSTRAP_API_KEY_SECRET: 'local-admin-secret-change-me-0001' },
    );
    expect(refused.ok).toBe(false);
    expect(refused.stdout + refused.stderr).toContain(
      'BOOTSTRAP_API_KEY_SECRET: this value is written in the repository',
    );
  }, 120_000);

  it('workspace-api: a bootstrap key disabled with `keys disable` stays disabled after a restart', async () => {
    expect(bootstrap.api_key_secret).not.toBe('');
    const disabled = compose(
      'exec',
      '-T',
      'workspace-api',
      'node',
      'apps/workspace-api/dist/cli.js',
      'keys',
      'disable',
      bootstrap.api_key,
    );
    expect(disabled).toContain(`disabled ${bootstrap.api_key}`);
    const restart = Date.now();
    compose('restart', 'workspace-api');
    const status = await waitHealthy(['workspace-api'], 120_000);
    figures.push(`workspace-api restart → healthy ${elapsed(restart)} s`);
    expect(status).toEqual({ 'workspace-api': 'healthy' });
    const answer = await callWorkspace('validate_credentials', {});
    expect({ status: answer.status, body: await json(answer) }).toEqual({
      status: 403,
      body: { error_message: 'Access Denied' },
    });
    expect(compose('logs', '--no-color', 'workspace-api')).toContain(
      `bootstrap key ${bootstrap.api_key} is disabled and stays disabled`,
    );
  }, 180_000);

  const social = { token: '', postId: 0, text: `compose test ${PROJECT}` };

  it('social-api: a registered user logs in, posts, and reads the post back; /docs loads', async () => {
    const user = { username: 'composer', email: 'composer@example.com', password: 'compose-pass' };
    const registered = await fetch(url('social-api', '/api/users'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(user),
    });
    expect(registered.status).toBe(201);
    const login = await fetch(url('social-api', '/api/tokens'), {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${user.username}:${user.password}`).toString('base64')}`,
      },
    });
    expect(login.status).toBe(200);
    social.token = (await json(login)).access_token;
    const posted = await fetch(url('social-api', '/api/posts'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${social.token}` },
      body: JSON.stringify({ text: social.text }),
    });
    expect(posted.status).toBe(201);
    social.postId = (await json(posted)).id;
    const read = await fetch(url('social-api', `/api/posts/${social.postId}`), {
      headers: { authorization: `Bearer ${social.token}` },
    });
    expect(read.status).toBe(200);
    expect((await json(read)).text).toBe(social.text);
    const docs = await fetch(url('social-api', '/docs'));
    expect(docs.status).toBe(200);
  });

  it('social-api restarted: its post and the token issued before the restart still work', async () => {
    expect(social.postId).toBeGreaterThan(0);
    const startedAt = () =>
      must(DOCKER, ['inspect', '--format', '{{.State.StartedAt}}', containerOf('social-api')]).trim();
    const before = startedAt();
    const restart = Date.now();
    compose('restart', 'social-api');
    expect(startedAt()).not.toBe(before);
    const deadline = Date.now() + 120_000;
    let read: Response | undefined;
    while (Date.now() < deadline) {
      read = await fetch(url('social-api', `/api/posts/${social.postId}`), {
        headers: { authorization: `Bearer ${social.token}` },
      }).catch(() => undefined);
      if (read?.status === 200) break;
      await sleep(500);
    }
    figures.push(`social-api restart → answering ${elapsed(restart)} s`);
    expect(read?.status).toBe(200);
    expect((await json(read!)).text).toBe(social.text);
  }, 150_000);

  it("runs every service as a non-root user (uid 1000, the image's `node`), PID 1 included", () => {
    for (const app of APPS) {
      const container = containerOf(app);
      expect(must(DOCKER, ['exec', container, 'id', '-u']).trim()).toBe('1000');
      // Every process of the container as the host sees it (docker-init, node): none is root.
      const processes = must(DOCKER, ['top', container, '-o', 'pid,uid,args'])
        .trim()
        .split('\n')
        .slice(1)
        .map((line) => line.trim().split(/\s+/));
      expect(processes.map(([, , ...args]) => args.join(' '))).toEqual(
        expect.arrayContaining([expect.stringContaining(`node apps/${app}/dist/main.js`)]),
      );
      expect({ app, uids: [...new Set(processes.map(([, uid]) => uid))] }).toEqual({ app, uids: ['1000'] });
    }
  });

  it('gives every service its own schema of the shared database, with its tables and migration records there', () => {
    const sql =
      "select table_schema || '.' || table_name from information_schema.tables " +
      "where table_schema not in ('pg_catalog', 'information_schema') order by 1";
    const tables = psql(sql).split('\n');
    const bySchema = (schema: string) =>
      tables.filter((t) => t.startsWith(`${schema}.`)).map((t) => t.slice(schema.length + 1));
    expect(bySchema('microblog')).toEqual(expect.arrayContaining(['posts', 'replies', 'kysely_migration']));
    expect(bySchema('workspace')).toEqual(
      expect.arrayContaining(['users', 'groups', 'api_keys', 'kysely_migration']),
    );
    // service_secrets: social-api's SECRET_KEY, made by its migrations since compose sets none.
    expect(bySchema('social')).toEqual(
      expect.arrayContaining(['users', 'posts', 'tokens', 'service_secrets', 'kysely_migration']),
    );
    expect(bySchema('public')).toEqual([]);
    expect(tables.filter((t) => !/^(microblog|workspace|social)\./.test(t))).toEqual([]);
    // What each service wrote through its port above is in its own schema (its search_path), nowhere else.
    expect(psql(`select count(*) from microblog.posts where content = 'compose test ${PROJECT}'`)).toBe('1');
    expect(psql("select count(*) from workspace.users where username = 'compose.user'")).toBe('1');
    expect(psql(`select count(*) from social.posts where text = 'compose test ${PROJECT}'`)).toBe('1');
  });
});
