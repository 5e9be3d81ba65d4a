import { execFileSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..', '..');

/**
 * Every value the repository writes next to a secret-bearing name is public: production must refuse
 * each one. The values are read from the repository's tracked files, so a new example secret (in a
 * README, compose, a manifest, a test) fails here until production refuses it too (add it to
 * KNOWN_SECRETS in libs/http-kit/src/secrets.ts, or make it shorter than 32 characters).
 */

/**
 * Names that carry a secret: SECRET_KEY, *_SECRET, *_SECRET_KEY, *PASSWORD*, Kasm's api_key_secret
 * (not a URL named after one, such as PASSWORD_RESET_URL).
 */
const NAME = String.raw`(?:[A-Z0-9_]*(?:SECRET|PASSWORD)[A-Z0-9_]*(?<!_URL|_URI)|api_key_secret|api-key-secret)`;
/** A value: quoted, or a bare word (bare words count outside code only). */
const VALUE = String.raw`(?:'([^'\n]*)'|"([^"\n]*)"|` + '`([^`\\n]*)`' + String.raw`|([^\s'"\`,;)}\]]+))`;
/** `NAME=value`, `NAME: value`, `"NAME": "value"`, `--from-literal=NAME='value'`, `-H 'api-key-secret: value'`. */
const ASSIGNMENT = new RegExp(
  String.raw`(?<![A-Za-z0-9_]|\$\{)["']?${NAME}["']?[ \t]*(?:=|:)[ \t]*${VALUE}`,
  'g',
);
/** compose's `${VAR:-default}` / `${VAR-default}` where VAR is secret-bearing. */
const COMPOSE_DEFAULT = new RegExp(String.raw`\$\{${NAME}:?-([^}]*)\}`, 'g');
/** Kubernetes env entries: `- name: SECRET_KEY` followed by `value: ...`. */
const K8S_ENV = new RegExp(String.raw`-[ \t]*name:[ \t]*${NAME}[ \t]*\n[ \t]*value:[ \t]*${VALUE}`, 'g');
/** The password of a connection URL (postgres://user:password@host). */
const URL_PASSWORD = /\b(?:postgres(?:ql)?|redis|amqp|mysql):\/\/[^:/@\s'"]+:([^@\s'"/]+)@/g;

const CODE = /\.(ts|tsx|js|mjs|cjs)$/;
const SKIPPED = /(^|\/)(package-lock\.json|node_modules\/)|\.(png|jpg|gif|ico|woff2?|tgz|gz)$/;

/** Not a literal: a variable, a command substitution, a template, a placeholder, nothing. */
function isLiteral(value: string): boolean {
  const v = value.trim();
  return (
    v !== '' &&
    !/^\$/.test(v) && // $VAR, ${VAR}, $(command)
    !v.includes('${') &&
    !/^<[^>]*>$/.test(v) && // <your secret>
    !/^(true|false|null|undefined|optional)$/i.test(v) &&
    !/^\d+$/.test(v) // a length or a count, not a secret
  );
}

interface Found {
  file: string;
  value: string;
}

function secretsIn(file: string, text: string): Found[] {
  const code = CODE.test(file);
  const found: Found[] = [];
  const add = (value: string | undefined) => {
    if (value !== undefined && isLiteral(value)) found.push({ file, value: value.trim() });
  };
  for (const m of text.matchAll(ASSIGNMENT)) {
    const [, single, double, backtick, bare] = m;
    // In code a bare word is an identifier (`SECRET_KEY: secret`), a type (`password: string`) or a
    // call; only quoted literals are values there. A `${...}` template is built, not written.
    if (single !== undefined) add(single);
    else if (double !== undefined) add(double);
    else if (backtick !== undefined) add(backtick);
    else if (!code) add(bare);
  }
  for (const m of text.matchAll(COMPOSE_DEFAULT)) add(m[1]);
  for (const m of text.matchAll(K8S_ENV)) add(m[1] ?? m[2] ?? m[3] ?? (code ? undefined : m[4]));
  for (const m of text.matchAll(URL_PASSWORD)) add(decodeURIComponent(m[1]));
  return found;
}

function repositorySecrets(): Found[] {
  const files = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' })
    .split('\0')
    .filter((f) => f && !SKIPPED.test(f));
  return files.flatMap((file) => {
    const path = join(ROOT, file);
    let size: number;
    try {
      size = statSync(path).size;
    } catch {
      return []; // tracked but deleted in the working tree
    }
    if (size > 2_000_000) return [];
    const text = readFileSync(path, 'utf8');
    return text.includes('\0') ? [] : secretsIn(file, text);
  });
}

type SecretsModule = typeof import('../../../libs/http-kit/src/secrets');
interface ConfigModule {
  loadConfig(env: Record<string, string | undefined>): unknown;
}
const load = <T>(path: string): Promise<T> => import(join(ROOT, path)) as Promise<T>;

describe('every secret written in the repository is refused in production', () => {
  const found = repositorySecrets();
  const values = [...new Set(found.map((f) => f.value))].sort();

  test('the scan reads every kind of place a secret is written', () => {
    // One per kind: a compose default, a Kubernetes README's --from-literal, a TypeScript constant, a
    // connection URL's password, a Markdown curl header, an env-style test value.
    const expected = [
      'platform-local',
      'change-me-to-a-long-random-secret',
      'change-me-to-64-random-hex-characters-0123456789abcdef0123456789',
      'top-secret!',
      'change-me',
      'local-admin-secret-change-me-0001',
    ];
    expect(expected.filter((v) => !values.includes(v))).toEqual([]);
    // Not a variable, a command or a placeholder.
    expect(values.filter((v) => /^\$|\$\{|^<.*>$/.test(v))).toEqual([]);
    expect(
      secretsIn('x.env', 'SECRET_KEY=$(openssl rand -hex 32)\nDB_PASSWORD=${PW}\nAPI_SECRET=\n'),
    ).toEqual([]);
    expect(
      secretsIn('k.yaml', '  - name: SOME_SECRET\n    value: k8s-literal-value\n').map((f) => f.value),
    ).toContain('k8s-literal-value');
  });

  test('productionSecretProblem refuses each of them (known, or shorter than 32 characters)', async () => {
    const { productionSecretProblem } = await load<SecretsModule>('libs/http-kit/src/secrets');
    const accepted = found.filter((f) => productionSecretProblem(f.value) === undefined);
    expect(accepted).toEqual([]);
  });

  test("social-api's SECRET_KEY and workspace-api's bootstrap secret refuse each of them in production", async () => {
    const social = await load<ConfigModule>('apps/social-api/src/config');
    const workspace = await load<ConfigModule>('apps/workspace-api/src/config');
    const base = { NODE_ENV: 'production', LOG_LEVEL: 'silent' };
    const acceptedBy = (
      service: string,
      loadConfig: ConfigModule['loadConfig'],
      env: (v: string) => object,
    ) =>
      values
        .filter((value) => {
          try {
            loadConfig({ ...base, ...env(value) });
            return true;
          } catch {
            return false;
          }
        })
        .map((value) => ({ service, value }));
    expect([
      ...acceptedBy('social-api SECRET_KEY', social.loadConfig, (v) => ({ SECRET_KEY: v })),
      ...acceptedBy('workspace-api BOOTSTRAP_API_KEY_SECRET', workspace.loadConfig, (v) => ({
        BOOTSTRAP_API_KEY: 'Bootstrap',
        BOOTSTRAP_API_KEY_SECRET: v,
      })),
    ]).toEqual([]);
    // And both accept a random one, so the refusals above are about the values.
    const random = Array.from({ length: 64 }, () => '0123456789abcdef'[Math.floor(Math.random() * 16)]).join(
      '',
    );
    expect(() => social.loadConfig({ ...base, SECRET_KEY: random })).not.toThrow();
    expect(() =>
      workspace.loadConfig({ ...base, BOOTSTRAP_API_KEY: 'Bootstrap', BOOTSTRAP_API_KEY_SECRET: random }),
    ).not.toThrow();
  });
});
