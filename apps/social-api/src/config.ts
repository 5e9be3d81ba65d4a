import { Type } from '@sinclair/typebox';
import { parseEnv } from '@platform/schema';
import { EnvFlag, isOn, serviceConfig, serviceEnv, type ServiceConfig } from '@platform/http-kit';

export const DEFAULT_SECRET_KEY = 'top-secret!';

/** The service's environment, one schema: names and defaults are the Flask backend's. */
export const EnvSchema = Type.Object({
  ...serviceEnv({ port: 5000, schema: 'social' }),
  NODE_ENV: Type.Union([Type.Literal('development'), Type.Literal('production'), Type.Literal('test')], {
    default: 'development',
    description:
      'production: Secure/SameSite=None cookies with CORS, refuses the default SECRET_KEY and DISABLE_AUTH',
  }),
  SECRET_KEY: Type.String({
    minLength: 1,
    default: DEFAULT_SECRET_KEY,
    description: 'HS256 key of access and reset tokens and of signed cookies',
  }),
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
  /** More OAuth2 providers as JSON: {"name": {client_id, client_secret, authorize_url, access_token_url, userinfo_url, scopes}}. */
  OAUTH2_PROVIDERS: Type.Optional(Type.String()),
  /** argon2id cost; tests lower it. Defaults are the library's (~150-190 ms a hash here). */
  ARGON2_MEMORY_KIB: Type.Integer({ minimum: 8, default: 65536 }),
  ARGON2_TIME_COST: Type.Integer({ minimum: 1, default: 3 }),
});

export const OAuth2ProviderSchema = Type.Object({
  client_id: Type.String({ minLength: 1 }),
  client_secret: Type.String(),
  authorize_url: Type.String({ minLength: 1 }),
  access_token_url: Type.String({ minLength: 1 }),
  userinfo_url: Type.String({ minLength: 1 }),
  scopes: Type.Array(Type.String(), { default: [] }),
});

export interface OAuth2Provider {
  clientId: string;
  clientSecret: string;
  authorizeUrl: string;
  accessTokenUrl: string;
  userinfoUrl: string;
  scopes: string[];
}

export interface Config extends ServiceConfig {
  mode: 'development' | 'production' | 'test';
  secretKey: string;
  disableAuth: boolean;
  accessTokenMs: number;
  refreshTokenMs: number;
  graceMsAfterRotation: number;
  resetTokenMs: number;
  passwordResetUrl: string;
  useCors: boolean;
  refreshTokenInCookie: boolean;
  refreshTokenInBody: boolean;
  /** Attributes of the refresh token and OAuth2 state cookies (the Flask backend's rules). */
  cookie: { secure: boolean; sameSite: 'none' | 'lax' | 'strict' };
  mail: {
    server?: string;
    port: number;
    useTls: boolean;
    username?: string;
    password?: string;
    sender: string;
  };
  oauth2: { redirectUri: string; providers: Record<string, OAuth2Provider> };
  argon2: { memoryCost: number; timeCost: number };
}

export const BODY_LIMIT = 64 * 1024;

function oauth2Providers(e: ReturnType<typeof parseEnv<typeof EnvSchema>>): Record<string, OAuth2Provider> {
  const providers: Record<string, OAuth2Provider> = {};
  if (e.GITHUB_CLIENT_ID) {
    providers.github = {
      clientId: e.GITHUB_CLIENT_ID,
      clientSecret: e.GITHUB_CLIENT_SECRET ?? '',
      authorizeUrl: 'https://github.com/login/oauth/authorize',
      accessTokenUrl: 'https://github.com/login/oauth/access_token',
      userinfoUrl: 'https://api.github.com/user/emails',
      scopes: ['user:email'],
    };
  }
  if (e.GOOGLE_CLIENT_ID) {
    providers.google = {
      clientId: e.GOOGLE_CLIENT_ID,
      clientSecret: e.GOOGLE_CLIENT_SECRET ?? '',
      authorizeUrl: 'https://accounts.google.com/o/oauth2/auth',
      accessTokenUrl: 'https://accounts.google.com/o/oauth2/token',
      userinfoUrl: 'https://www.googleapis.com/oauth2/v3/userinfo',
      scopes: ['https://www.googleapis.com/auth/userinfo.email'],
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
      const p = parseEnv(
        OAuth2ProviderSchema,
        Object.fromEntries(Object.entries(raw as object).map(([k, v]) => [k, v])) as never,
      );
      providers[name] = {
        clientId: p.client_id,
        clientSecret: p.client_secret,
        authorizeUrl: p.authorize_url,
        accessTokenUrl: p.access_token_url,
        userinfoUrl: p.userinfo_url,
        scopes: p.scopes,
      };
    }
  }
  return providers;
}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const e = parseEnv(EnvSchema, env);
  const mode = e.NODE_ENV;
  if (mode === 'production' && e.SECRET_KEY === DEFAULT_SECRET_KEY) {
    throw new Error(
      'invalid configuration:\n  SECRET_KEY: set a secret of your own in production (the default is public)',
    );
  }
  const disableAuth = isOn(e.DISABLE_AUTH);
  if (mode === 'production' && disableAuth)
    throw new Error('invalid configuration:\n  DISABLE_AUTH: development only, refused in production');
  const useCors = isOn(e.USE_CORS);
  const development = mode !== 'production';
  return {
    ...serviceConfig(e),
    mode,
    secretKey: e.SECRET_KEY,
    disableAuth,
    accessTokenMs: e.ACCESS_TOKEN_MINUTES * 60_000,
    refreshTokenMs: e.REFRESH_TOKEN_DAYS * 86_400_000,
    graceMsAfterRotation: e.TOKEN_GRACE_SECONDS * 1000,
    resetTokenMs: e.RESET_TOKEN_MINUTES * 60_000,
    passwordResetUrl: e.PASSWORD_RESET_URL,
    useCors,
    refreshTokenInCookie: isOn(e.REFRESH_TOKEN_IN_COOKIE),
    refreshTokenInBody: isOn(e.REFRESH_TOKEN_IN_BODY),
    cookie: {
      secure: !development,
      sameSite: !useCors ? 'strict' : development ? 'lax' : 'none',
    },
    mail: {
      server: e.MAIL_SERVER,
      port: e.MAIL_PORT,
      useTls: isOn(e.MAIL_USE_TLS),
      username: e.MAIL_USERNAME,
      password: e.MAIL_PASSWORD,
      sender: e.MAIL_DEFAULT_SENDER,
    },
    oauth2: { redirectUri: e.OAUTH2_REDIRECT_URI, providers: oauth2Providers(e) },
    argon2: { memoryCost: e.ARGON2_MEMORY_KIB, timeCost: e.ARGON2_TIME_COST },
  };
}
