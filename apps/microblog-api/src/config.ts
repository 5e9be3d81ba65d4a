import { Type } from '@sinclair/typebox';
import { parseEnv } from '@platform/schema';
import { serviceConfig, serviceEnv, type ServiceConfig } from '@platform/http-kit';

/** The service's environment, one schema: defaults here are the documented ones. */
export const EnvSchema = Type.Object({
  ...serviceEnv({ port: 8887, schema: 'microblog' }),
  WRITE_RATE_LIMIT: Type.Integer({
    minimum: 1,
    default: 60,
    description: 'Writes per minute per client address',
  }),
});

export interface Config extends ServiceConfig {
  writeRateLimit: number;
}

/** Largest request body the contract accepts (16 KiB); not configurable. */
export const BODY_LIMIT = 16 * 1024;

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const e = parseEnv(EnvSchema, env);
  return { ...serviceConfig(e), writeRateLimit: e.WRITE_RATE_LIMIT };
}
