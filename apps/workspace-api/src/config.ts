import { resolve } from 'node:path';
import { Type } from '@sinclair/typebox';
import { parseEnv } from '@platform/schema';
import type { DatabaseConfig } from '@platform/db';

/** `<workspace root>/.data/workspace` from src/ and dist/ alike. */
const DEFAULT_DATA_DIR = resolve(__dirname, '..', '..', '..', '.data', 'workspace');

const Flag = (fallback: boolean) =>
  Type.Union([Type.Boolean(), Type.Literal('yes'), Type.Literal('no'), Type.Literal('on'), Type.Literal('off'), Type.Literal('1'), Type.Literal('0')], {
    default: fallback,
  });
const flag = (v: boolean | string) => v === true || v === 'yes' || v === 'on' || v === '1';

/** The service's environment, one schema: defaults here are the documented ones. */
export const EnvSchema = Type.Object({
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8080 }),
  HOST: Type.String({ default: '127.0.0.1' }),
  DATABASE_URL: Type.Optional(Type.String()),
  DATA_DIR: Type.String({ default: DEFAULT_DATA_DIR }),
  DB_SCHEMA: Type.String({ default: 'workspace', pattern: '^[a-z_][a-z0-9_]*$' }),
  DB_POOL_MAX: Type.Integer({ minimum: 1, default: 10 }),
  MIGRATE_ON_START: Flag(true),
  BOOTSTRAP_API_KEY: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9]{1,64}$' })),
  BOOTSTRAP_API_KEY_SECRET: Type.Optional(Type.String({ minLength: 1 })),
  ENFORCE_PASSWORD_RULES_ON_CREATE: Flag(false),
  /** argon2id cost; tests lower it. Defaults are the library's (~150-190 ms a hash here). */
  ARGON2_MEMORY_KIB: Type.Integer({ minimum: 8, default: 65536 }),
  ARGON2_TIME_COST: Type.Integer({ minimum: 1, default: 3 }),
  CORS_ORIGINS: Type.String({ default: '*' }),
  TRUST_PROXY: Type.String({ default: 'false' }),
  LOG_LEVEL: Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)), { default: 'info' }),
  LOG_FORMAT: Type.Union([Type.Literal('json'), Type.Literal('pretty')], { default: 'json' }),
});

export interface Config {
  port: number;
  host: string;
  database: DatabaseConfig;
  migrateOnStart: boolean;
  bootstrapKey?: { apiKey: string; secret: string };
  enforcePasswordRulesOnCreate: boolean;
  argon2: { memoryCost: number; timeCost: number };
  corsOrigins: '*' | string[];
  trustProxy: boolean | string;
  logLevel: string;
  logFormat: 'json' | 'pretty';
}

export const BODY_LIMIT = 1024 * 1024;

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const e = parseEnv(EnvSchema, env);
  return {
    port: e.PORT,
    host: e.HOST,
    database: { url: e.DATABASE_URL, dataDir: e.DATA_DIR, schema: e.DB_SCHEMA, poolMax: e.DB_POOL_MAX },
    migrateOnStart: flag(e.MIGRATE_ON_START),
    bootstrapKey: e.BOOTSTRAP_API_KEY && e.BOOTSTRAP_API_KEY_SECRET ? { apiKey: e.BOOTSTRAP_API_KEY, secret: e.BOOTSTRAP_API_KEY_SECRET } : undefined,
    enforcePasswordRulesOnCreate: flag(e.ENFORCE_PASSWORD_RULES_ON_CREATE),
    argon2: { memoryCost: e.ARGON2_MEMORY_KIB, timeCost: e.ARGON2_TIME_COST },
    corsOrigins: e.CORS_ORIGINS.trim() === '*' ? '*' : e.CORS_ORIGINS.split(',').map((o) => o.trim()).filter(Boolean),
    trustProxy: e.TRUST_PROXY === 'true' ? true : e.TRUST_PROXY === 'false' ? false : e.TRUST_PROXY,
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
  };
}
