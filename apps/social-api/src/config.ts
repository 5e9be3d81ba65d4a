import { Type, type Static } from '@sinclair/typebox';
import { EnvFlag, parseEnv } from '@platform/schema';
import {
  eventStreamConfig,
  eventStreamEnv,
  productionSecretProblem,
  serviceConfig,
  serviceEnv,
  type ServiceMode,
} from '@platform/http-kit';
import { passwordHashingConfig, passwordHashingEnv } from '@platform/passwords';

/** Limits on the routes that hash a password or send mail, per client address and per account. */
function loginLimitsEnv() {
  const perWindow = (defaultMax: number, what: string) =>
    Type.Integer({ minimum: 1, maximum: 1_000_000, default: defaultMax, description: what });
  const unlessSet = (what: string) => Type.Integer({ minimum: 1, maximum: 1_000_000, description: what });
  return {
    LOGIN_FAILURES_PER_ADDRESS: perWindow(
      30,
      'Failed logins (POST /api/tokens) per client address per LOGIN_WINDOW_SECONDS; then 429, the wait doubling while it keeps trying',
    ),
    LOGIN_FAILURES_PER_ACCOUNT: perWindow(
      10,
      'Failed logins per account from one address per LOGIN_WINDOW_SECONDS (other addresses, and so the owner, are not locked out)',
    ),
    LOGIN_FAILURES_PER_ACCOUNT_ANYWHERE: perWindow(
      50,
      'Failed logins per account from all addresses together per hour; beyond it, an address that has itself failed for the account waits 1 s, doubling with each further failure (a clean address, so the owner, is still checked at once)',
    ),
    LOGIN_WINDOW_SECONDS: perWindow(
      300,
      'Window of the login limits, and the first lockout; each lockout in a row doubles it',
    ),
    LOGIN_MAX_WAIT_SECONDS: perWindow(3600, 'Longest wait a login limit imposes (the cap of the doubling)'),
    // Off in development/test unless set (a client's test suite registers its own users); on in production.
    REGISTRATIONS_PER_ADDRESS: Type.Optional(
      unlessSet(
        'New accounts (POST /api/users) per client address per hour; default: 20 in production, off otherwise',
      ),
    ),
    RESETS_PER_ADDRESS: Type.Optional(
      unlessSet(
        'Reset requests (POST /api/tokens/reset) per client address per hour; default: 10 in production, off otherwise',
      ),
    ),
    RESETS_PER_EMAIL: Type.Optional(
      unlessSet('Reset mails to one address per hour; default: 3 in production, off otherwise'),
    ),
    TOKEN_PRUNE_SECONDS: perWindow(
      60,
      'How often token pairs whose refresh ended more than a day ago are deleted (also at each login)',
    ),
    TOKEN_PRUNE_BATCH: perWindow(
      1000,
      'Rows one prune statement deletes; a run repeats while batches come back full, at most 10 (bounded work per run)',
    ),
  };
}

/** The registration and reset-request limits production mode applies when their variable is unset. */
export const PRODUCTION_FORM_LIMITS = {
  registrationsPerAddress: 20,
  resetsPerAddress: 10,
  resetsPerEmail: 3,
};

/** The service's environment, one schema: names and defaults are the Flask backend's. */
export const EnvSchema = Type.Object({
  ...serviceEnv({ port: 5000, schema: 'social' }),
  ...eventStreamEnv(),
  EVENTS_TOKEN_CHECK_MS: Type.Integer({
    minimum: 10,
    maximum: 600_000,
    default: 5000,
    description:
      'How often the live streams’ access tokens are checked (one statement for all of a process’s streams): a stream whose token expired or was revoked gets `token_expired` and ends within this time',
  }),
  // No default in any mode: unset, the service signs with the key its migrations made in its own
  // schema (see plugins/app/secret-key.ts), so no public value is ever a default.
  SECRET_KEY: Type.Optional(
    Type.String({
      minLength: 1,
      description:
        'HS256 key of access and reset tokens and of signed cookies; unset: a random key made once in the database by the migrations (shared by replicas, kept across restarts). Production (NODE_ENV) refuses a value shorter than 32 characters or written in this repository',
    }),
  ),
  DISABLE_AUTH: EnvFlag(false, 'development only: every token endpoint acts as user 1'),
  ACCESS_TOKEN_MINUTES: Type.Number({ exclusiveMinimum: 0, default: 15 }),
  REFRESH_TOKEN_DAYS: Type.Number({ exclusiveMinimum: 0, default: 7 }),
  REFRESH_TOKEN_IN_COOKIE: EnvFlag(true),
  REFRESH_TOKEN_IN_BODY: EnvFlag(false),
  /** How long a rotated pair keeps working, so racing refreshes from one browser do not log it out. */
  TOKEN_GRACE_SECONDS: Type.Number({ minimum: 0, default: 5 }),
  RESET_TOKEN_MINUTES: Type.Number({ exclusiveMinimum: 0, default: 15 }),
  PASSWORD_RESET_URL: Type.String({ default: 'http://localhost:3000/reset' }),
  USE_CORS: EnvFlag(true),
  MAIL_SERVER: Type.Optional(
    Type.String({ description: 'SMTP host; unset: reset mails are written to the log' }),
  ),
  MAIL_PORT: Type.Integer({ minimum: 1, maximum: 65535, default: 25 }),
  MAIL_USE_TLS: EnvFlag(false),
  MAIL_USERNAME: Type.Optional(Type.String()),
  MAIL_PASSWORD: Type.Optional(Type.String()),
  MAIL_DEFAULT_SENDER: Type.String({ default: 'donotreply@microblog.example.com' }),
  GITHUB_CLIENT_ID: Type.Optional(Type.String()),
  GITHUB_CLIENT_SECRET: Type.Optional(Type.String()),
  GOOGLE_CLIENT_ID: Type.Optional(Type.String()),
  GOOGLE_CLIENT_SECRET: Type.Optional(Type.String()),
  OAUTH2_REDIRECT_URI: Type.String({ default: 'http://localhost:3000/oauth2/{provider}/callback' }),
  /** More OAuth2 providers as JSON: {"name": {client_id, client_secret, authorize_url, access_token_url, userinfo_url, scopes, email_verified_field}}. */
  OAUTH2_PROVIDERS: Type.Optional(Type.String()),
  ...passwordHashingEnv(),
  ...loginLimitsEnv(),
});

export const OAuth2ProviderSchema = Type.Object({
  client_id: Type.String({ minLength: 1 }),
  client_secret: Type.String(),
  authorize_url: Type.String({ minLength: 1 }),
  access_token_url: Type.String({ minLength: 1 }),
  userinfo_url: Type.String({ minLength: 1 }),
  scopes: Type.Array(Type.String(), { default: [] }),
  email_verified_field: Type.String({
    minLength: 1,
    description:
      "The user-info property that is true when the provider verified the address (of the object, or of each entry of a list of addresses): GitHub's `verified`, OpenID Connect's `email_verified`. Required: an address without it never signs in.",
  }),
});

export type OAuth2Provider = Static<typeof OAuth2ProviderSchema>;

/** The providers the Flask backend knows, by name: each is on when its client id is set. */
const BUILT_IN_OAUTH2_ENDPOINTS: Record<
  'github' | 'google',
  Omit<OAuth2Provider, 'client_id' | 'client_secret'>
> = {
  github: {
    authorize_url: 'https://github.com/login/oauth/authorize',
    access_token_url: 'https://github.com/login/oauth/access_token',
    userinfo_url: 'https://api.github.com/user/emails',
    scopes: ['user:email'],
    email_verified_field: 'verified',
  },
  google: {
    authorize_url: 'https://accounts.google.com/o/oauth2/auth',
    access_token_url: 'https://accounts.google.com/o/oauth2/token',
    userinfo_url: 'https://www.googleapis.com/oauth2/v3/userinfo',
    scopes: ['https://www.googleapis.com/auth/userinfo.email'],
    email_verified_field: 'email_verified',
  },
};

export const BODY_LIMIT = 64 * 1024;

type Env = Static<typeof EnvSchema>;

function oauth2Providers(e: Env): Record<string, OAuth2Provider> {
  const providers: Record<string, OAuth2Provider> = {};
  const builtIn = [
    ['github', e.GITHUB_CLIENT_ID, e.GITHUB_CLIENT_SECRET],
    ['google', e.GOOGLE_CLIENT_ID, e.GOOGLE_CLIENT_SECRET],
  ] as const;
  for (const [name, clientId, clientSecret] of builtIn) {
    if (clientId)
      providers[name] = {
        client_id: clientId,
        client_secret: clientSecret ?? '',
        ...BUILT_IN_OAUTH2_ENDPOINTS[name],
      };
  }
  if (e.OAUTH2_PROVIDERS) {
    let extra: unknown;
    try {
      extra = JSON.parse(e.OAUTH2_PROVIDERS);
    } catch {
      throw new Error('invalid configuration:\n  OAUTH2_PROVIDERS: not valid JSON');
    }
    if (!extra || typeof extra !== 'object' || Array.isArray(extra))
      throw new Error('invalid configuration:\n  OAUTH2_PROVIDERS: must be a JSON object');
    for (const [name, raw] of Object.entries(extra)) {
      if (!/^[a-z0-9_-]{1,32}$/.test(name))
        throw new Error(`invalid configuration:\n  OAUTH2_PROVIDERS: bad provider name "${name}"`);
      const fields = Object.fromEntries(Object.entries(raw as object).map(([k, v]) => [k, v])) as never;
      // The endpoints first; then the verified flag, refused at start with what to set rather than at
      // every login: a provider without it could sign no one in.
      parseEnv(Type.Omit(OAuth2ProviderSchema, ['email_verified_field']), fields);
      if (!Object.hasOwn(fields, 'email_verified_field'))
        throw new Error(
          `invalid configuration:\n  OAUTH2_PROVIDERS: "${name}" needs "email_verified_field", the user-info property that is true when the provider verified the address ("email_verified" for OpenID Connect providers); an address the provider does not vouch for never signs in`,
        );
      providers[name] = parseEnv(OAuth2ProviderSchema, fields);
    }
  }
  return providers;
}

/** Registration and reset-request limits: as set, else production's defaults in production, else off. */
function formLimits(
  e: Pick<Env, 'REGISTRATIONS_PER_ADDRESS' | 'RESETS_PER_ADDRESS' | 'RESETS_PER_EMAIL'>,
  mode: ServiceMode,
): Record<keyof typeof PRODUCTION_FORM_LIMITS, number | undefined> {
  const byDefault = (key: keyof typeof PRODUCTION_FORM_LIMITS) =>
    mode === 'production' ? PRODUCTION_FORM_LIMITS[key] : undefined;
  return {
    registrationsPerAddress: e.REGISTRATIONS_PER_ADDRESS ?? byDefault('registrationsPerAddress'),
    resetsPerAddress: e.RESETS_PER_ADDRESS ?? byDefault('resetsPerAddress'),
    resetsPerEmail: e.RESETS_PER_EMAIL ?? byDefault('resetsPerEmail'),
  };
}

/** The service's configuration: what `loadConfig` makes of `EnvSchema` (each setting described once). */
export type Config = ReturnType<typeof loadConfig>;

/**
 * Production (NODE_ENV, shared by every service: see `serviceEnv`) also means Secure/SameSite=None
 * cookies with CORS, and refuses DISABLE_AUTH and a known or short SECRET_KEY.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env) {
  const e = parseEnv(EnvSchema, env);
  const service = serviceConfig(e);
  const { mode } = service;
  const secretProblem =
    mode === 'production' && e.SECRET_KEY !== undefined ? productionSecretProblem(e.SECRET_KEY) : undefined;
  if (secretProblem) throw new Error(`invalid configuration:\n  SECRET_KEY: ${secretProblem}`);
  const disableAuth = e.DISABLE_AUTH;
  if (mode === 'production' && disableAuth)
    throw new Error('invalid configuration:\n  DISABLE_AUTH: development only, refused in production');
  const useCors = e.USE_CORS;
  const development = mode !== 'production';
  return {
    ...service,
    /** SECRET_KEY as set; unset: the key the migrations made (`app.secretKey`, the one to use). */
    secretKey: e.SECRET_KEY,
    disableAuth,
    accessTokenMs: e.ACCESS_TOKEN_MINUTES * 60_000,
    refreshTokenMs: e.REFRESH_TOKEN_DAYS * 86_400_000,
    graceMsAfterRotation: e.TOKEN_GRACE_SECONDS * 1000,
    resetTokenMs: e.RESET_TOKEN_MINUTES * 60_000,
    passwordResetUrl: e.PASSWORD_RESET_URL,
    useCors,
    refreshTokenInCookie: e.REFRESH_TOKEN_IN_COOKIE,
    refreshTokenInBody: e.REFRESH_TOKEN_IN_BODY,
    /** Attributes of the refresh token and OAuth2 state cookies (the Flask backend's rules). */
    cookie: {
      secure: !development,
      sameSite: !useCors ? ('strict' as const) : development ? ('lax' as const) : ('none' as const),
    },
    mail: {
      server: e.MAIL_SERVER,
      port: e.MAIL_PORT,
      useTls: e.MAIL_USE_TLS,
      username: e.MAIL_USERNAME,
      password: e.MAIL_PASSWORD,
      sender: e.MAIL_DEFAULT_SENDER,
    },
    oauth2: { redirectUri: e.OAUTH2_REDIRECT_URI, providers: oauth2Providers(e) },
    passwordHashing: passwordHashingConfig(e),
    /** The live streams (`GET /api/events/*`): their listener, caps, heartbeat, pruning, token checks. */
    events: { ...eventStreamConfig(e, service.maxConnections), tokenCheckMs: e.EVENTS_TOKEN_CHECK_MS },
    /** Ended token pairs are deleted every `intervalMs`, at most `batch` rows a statement. */
    tokenPrune: { intervalMs: e.TOKEN_PRUNE_SECONDS * 1000, batch: e.TOKEN_PRUNE_BATCH },
    /** Counts per window; see `loginLimitsEnv`. Undefined: that limit is off. */
    limits: {
      loginFailuresPerAddress: e.LOGIN_FAILURES_PER_ADDRESS,
      loginFailuresPerAccount: e.LOGIN_FAILURES_PER_ACCOUNT,
      loginFailuresPerAccountAnywhere: e.LOGIN_FAILURES_PER_ACCOUNT_ANYWHERE,
      loginWindowSeconds: e.LOGIN_WINDOW_SECONDS,
      loginMaxWaitSeconds: Math.max(e.LOGIN_MAX_WAIT_SECONDS, e.LOGIN_WINDOW_SECONDS),
      ...formLimits(e, mode),
    },
  };
}
