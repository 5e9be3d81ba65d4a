import { resolve } from 'node:path';
import { Type } from '@sinclair/typebox';
import { parseEnv } from '@platform/schema';
import type { DatabaseConfig } from '@platform/db';

/**
 * `<workspace root>/.data/microblog` from src/ and dist/ alike, so `npm start` (run at the root)
 * and nx targets (run in the project folder) use the same embedded database.
 */
const DEFAULT_DATA_DIR = resolve(__dirname, '..', '..', '..', '.data', 'microblog');

/** The service's environment, one schema: defaults here are the documented ones. */
export const EnvSchema = Type.Object({
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8887 }),
  HOST: Type.String({ default: '127.0.0.1', description: 'Use 0.0.0.0 in containers' }),
  DATABASE_URL: Type.Optional(Type.String({ description: 'PostgreSQL connection string; unset: embedded database' })),
  DATA_DIR: Type.String({ default: DEFAULT_DATA_DIR, description: 'Embedded database directory' }),
  DB_SCHEMA: Type.String({ default: 'microblog', pattern: '^[a-z_][a-z0-9_]*$' }),
  DB_POOL_MAX: Type.Integer({ minimum: 1, default: 10 }),
  MIGRATE_ON_START: Type.Boolean({ default: true }),
  WRITE_RATE_LIMIT: Type.Integer({ minimum: 1, default: 60, description: 'Writes per minute per client address' }),
  CORS_ORIGINS: Type.String({ default: '*', description: '`*` or a comma-separated list of origins' }),
  TRUST_PROXY: Type.String({ default: 'false', description: '`true`, `false`, or addresses/CIDRs of trusted proxies' }),
  LOG_LEVEL: Type.Union([Type.Literal('fatal'), Type.Literal('error'), Type.Literal('warn'), Type.Literal('info'), Type.Literal('debug'), Type.Literal('trace'), Type.Literal('silent')], { default: 'info' }),
  LOG_FORMAT: Type.Union([Type.Literal('json'), Type.Literal('pretty')], { default: 'json' }),
});

export interface Config {
  port: number;
  host: string;
  database: DatabaseConfig;
  migrateOnStart: boolean;
  writeRateLimit: number;
  corsOrigins: '*' | string[];
  trustProxy: boolean | string;
  logLevel: string;
  logFormat: 'json' | 'pretty';
}

/** Largest request body the contract accepts (16 KiB); not configurable. */
export const BODY_LIMIT = 16 * 1024;

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const e = parseEnv(EnvSchema, env);
  return {
    port: e.PORT,
    host: e.HOST,
    database: { url: e.DATABASE_URL, dataDir: e.DATA_DIR, schema: e.DB_SCHEMA, poolMax: e.DB_POOL_MAX },
    migrateOnStart: e.MIGRATE_ON_START,
    writeRateLimit: e.WRITE_RATE_LIMIT,
    corsOrigins: e.CORS_ORIGINS.trim() === '*' ? '*' : e.CORS_ORIGINS.split(',').map((o) => o.trim()).filter(Boolean),
    trustProxy: e.TRUST_PROXY === 'true' ? true : e.TRUST_PROXY === 'false' ? false : e.TRUST_PROXY,
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
  };
}
