import { Type } from '@sinclair/typebox';
import { EnvFlag, parseEnv } from '@platform/schema';
import { productionSecretProblem, serviceConfig, serviceEnv } from '@platform/http-kit';
import { passwordHashingConfig, passwordHashingEnv } from '@platform/passwords';

/**
 * Shortest bootstrap secret in any mode: a value this short is a typo or a word, not a secret (16
 * random alphanumerics are ~95 bits; the secrets `keys create` makes are 32). Production asks for 32.
 */
export const MIN_BOOTSTRAP_SECRET_LENGTH = 16;

/** The pull policies of session images. */
export const PULL_POLICIES = ['if-missing', 'always', 'never'] as const;
export type PullPolicy = (typeof PULL_POLICIES)[number];

/** The session settings: the container engine and the per-user rules of sessions. */
function sessionsEnv() {
  const integer = (range: { minimum: number; maximum: number }, fallback: number, description: string) =>
    Type.Integer({ ...range, default: fallback, description });
  return {
    SESSIONS_ENGINE: Type.Optional(
      Type.Union([Type.Literal('docker'), Type.Literal('memory')], {
        description:
          'The container engine sessions run on: `docker` (the Docker Engine API at DOCKER_HOST) or `memory` (an ' +
          'in-process stand-in that runs no container, for demos and tests); unset: none, and the session ' +
          'operations answer that sessions are not available',
      }),
    ),
    DOCKER_HOST: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'The Docker daemon, as Docker\u2019s own clients read it (`unix:///var/run/docker.sock`, `tcp://host:2376`); ' +
          'unset: the local socket',
      }),
    ),
    SESSIONS_NETWORK: Type.Optional(
      Type.String({
        minLength: 1,
        description: 'The Docker network session containers join (unset: the default bridge)',
      }),
    ),
    SESSIONS_PULL: Type.Union(
      PULL_POLICIES.map((policy) => Type.Literal(policy)),
      {
        default: 'if-missing',
        description:
          'When a session\u2019s image is pulled: `if-missing` (a local image is used as it is), `always`, `never`',
      },
    ),
    SESSIONS_ALLOWED_CAPABILITIES: Type.String({
      default: '',
      description:
        'Comma-separated Linux capabilities a workspace\u2019s `run_config.cap_add` may add back (every other one stays ' +
        'dropped); empty: none',
    }),
    SESSIONS_MAX_PER_USER: integer(
      { minimum: 1, maximum: 1000 },
      2,
      'Live sessions one user may have at once (Kasm\u2019s `max_kasms_per_user`, whose default is 2)',
    ),
    SESSIONS_KEEPALIVE_SECONDS: integer(
      { minimum: 60, maximum: 30 * 24 * 3600 },
      3600,
      'How long a session lives past its start or its last keepalive (Kasm\u2019s group setting `keepalive_expiration`)',
    ),
    SESSIONS_START_TIMEOUT_MS: integer(
      { minimum: 1000, maximum: 3_600_000 },
      300_000,
      'How long a session\u2019s container may take to be pulled, created and started before the session fails',
    ),
    SESSIONS_RECONCILE_MS: integer(
      { minimum: 1000, maximum: 86_400_000 },
      60_000,
      'How often the engine\u2019s session containers and the session rows are made to agree (and once at start): ' +
        'containers without a live session removed, sessions whose container vanished stopped',
    ),
    SESSIONS_SWEEP_MS: integer(
      { minimum: 1000, maximum: 86_400_000 },
      30_000,
      'How often expired sessions are destroyed (by one replica at a time)',
    ),
    SESSIONS_WEB_PORT: integer(
      { minimum: 1, maximum: 65535 },
      6901,
      'The port a workspace serves on inside its container (6901 for Kasm\u2019s images); an image\u2019s ' +
        '`run_config.web_port` overrides it',
    ),
  };
}

/** The service's environment, one schema: defaults here are the documented ones. */
export const EnvSchema = Type.Object({
  ...serviceEnv({ port: 8080, schema: 'workspace' }),
  BOOTSTRAP_API_KEY: Type.Optional(
    Type.String({
      pattern: '^[A-Za-z0-9]{1,64}$',
      description: 'A Global Admin key created at start when missing (never re-enabled or changed)',
    }),
  ),
  BOOTSTRAP_API_KEY_SECRET: Type.Optional(
    Type.String({
      minLength: MIN_BOOTSTRAP_SECRET_LENGTH,
      description: "The bootstrap key's secret when it is created; unset: a random one, logged once",
    }),
  ),
  ENFORCE_PASSWORD_RULES_ON_CREATE: EnvFlag(false),
  ...passwordHashingEnv(),
  ...sessionsEnv(),
});

export const BODY_LIMIT = 1024 * 1024;

/** The service's configuration: what `loadConfig` makes of `EnvSchema` (each setting described once). */
export type Config = ReturnType<typeof loadConfig>;

/** Capability names as Docker takes them: upper case, without the `CAP_` prefix, each once. */
export function capabilitiesOf(list: string): string[] {
  const names = list
    .split(',')
    .map((name) => name.trim().toUpperCase().replace(/^CAP_/, ''))
    .filter(Boolean);
  return [...new Set(names)];
}

/** In production (NODE_ENV, shared by every service: see `serviceEnv`) the bootstrap secret must be unknown. */
export function loadConfig(env: Record<string, string | undefined> = process.env) {
  const e = parseEnv(EnvSchema, env);
  const problems: string[] = [];
  if (e.BOOTSTRAP_API_KEY_SECRET && !e.BOOTSTRAP_API_KEY)
    problems.push('BOOTSTRAP_API_KEY_SECRET: set BOOTSTRAP_API_KEY too (the key this secret belongs to)');
  const badCapabilities = capabilitiesOf(e.SESSIONS_ALLOWED_CAPABILITIES).filter(
    (c) => !/^[A-Z][A-Z0-9_]*$/.test(c),
  );
  if (badCapabilities.length)
    problems.push(`SESSIONS_ALLOWED_CAPABILITIES: not capability names: ${badCapabilities.join(', ')}`);
  // Every capability at once is a privileged container by another name.
  if (capabilitiesOf(e.SESSIONS_ALLOWED_CAPABILITIES).includes('ALL'))
    problems.push(
      'SESSIONS_ALLOWED_CAPABILITIES: ALL is refused (name the capabilities a workspace may add)',
    );
  if (e.NODE_ENV === 'production') {
    const secretProblem = e.BOOTSTRAP_API_KEY_SECRET && productionSecretProblem(e.BOOTSTRAP_API_KEY_SECRET);
    if (secretProblem)
      problems.push(
        `BOOTSTRAP_API_KEY_SECRET: ${secretProblem} (or leave it unset: a random one is logged once)`,
      );
  }
  if (problems.length) throw new Error(`invalid configuration:\n  ${problems.join('\n  ')}`);
  return {
    ...serviceConfig(e),
    /** Created at start when missing; `secret` unset: a random one, logged once. */
    bootstrapKey: e.BOOTSTRAP_API_KEY
      ? { apiKey: e.BOOTSTRAP_API_KEY, secret: e.BOOTSTRAP_API_KEY_SECRET }
      : undefined,
    enforcePasswordRulesOnCreate: e.ENFORCE_PASSWORD_RULES_ON_CREATE,
    /** argon2id cost (OWASP's by default) and how many hashes run or wait at once. */
    argon2: passwordHashingConfig(e),
    sessions: {
      /** undefined: no engine, the session operations answer `SessionsUnavailable`. */
      engine: e.SESSIONS_ENGINE,
      docker: {
        /** undefined: the driver's default (the local socket, or the process's DOCKER_HOST). */
        dockerHost: e.DOCKER_HOST,
        network: e.SESSIONS_NETWORK,
        pull: e.SESSIONS_PULL,
      },
      /** What a workspace's `run_config.cap_add` may add back (every other capability is dropped). */
      allowedCapabilities: capabilitiesOf(e.SESSIONS_ALLOWED_CAPABILITIES),
      maxPerUser: e.SESSIONS_MAX_PER_USER,
      keepaliveSeconds: e.SESSIONS_KEEPALIVE_SECONDS,
      startTimeoutMs: e.SESSIONS_START_TIMEOUT_MS,
      webPort: e.SESSIONS_WEB_PORT,
      /** The reconciler's period (it also runs once at start). */
      reconcileMs: e.SESSIONS_RECONCILE_MS,
      /** The expiry sweeper's period. */
      sweepMs: e.SESSIONS_SWEEP_MS,
    },
  };
}
