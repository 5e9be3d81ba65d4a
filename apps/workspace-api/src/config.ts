import { Type } from '@sinclair/typebox';
import { EnvFlag, parseEnv } from '@platform/schema';
import { serviceConfig, serviceEnv, type ServiceConfig } from '@platform/http-kit';
import { ARGON2_PARALLELISM } from './users/passwords';

/** The service's environment, one schema: defaults here are the documented ones. */
export const EnvSchema = Type.Object({
  ...serviceEnv({ port: 8080, schema: 'workspace' }),
  BOOTSTRAP_API_KEY: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9]{1,64}$' })),
  BOOTSTRAP_API_KEY_SECRET: Type.Optional(Type.String({ minLength: 1 })),
  ENFORCE_PASSWORD_RULES_ON_CREATE: EnvFlag(false),
  /**
   * argon2id cost; tests lower it. Defaults are the library's (~150-190 ms a hash here). The bounds
   * are the ones argon2 enforces on every hash, so a value it would refuse (each create_user then a
   * 500) stops the start instead: memory at least 8 KiB per lane (the library's 4 lanes, see
   * users/passwords.ts), both below 2^32.
   */
  ARGON2_MEMORY_KIB: Type.Integer({ minimum: 8 * ARGON2_PARALLELISM, maximum: 2 ** 32 - 1, default: 65536 }),
  ARGON2_TIME_COST: Type.Integer({ minimum: 1, maximum: 2 ** 32 - 1, default: 3 }),
});

export interface Config extends ServiceConfig {
  bootstrapKey?: { apiKey: string; secret: string };
  enforcePasswordRulesOnCreate: boolean;
  argon2: { memoryCost: number; timeCost: number };
}

export const BODY_LIMIT = 1024 * 1024;

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const e = parseEnv(EnvSchema, env);
  return {
    ...serviceConfig(e),
    bootstrapKey:
      e.BOOTSTRAP_API_KEY && e.BOOTSTRAP_API_KEY_SECRET
        ? { apiKey: e.BOOTSTRAP_API_KEY, secret: e.BOOTSTRAP_API_KEY_SECRET }
        : undefined,
    enforcePasswordRulesOnCreate: e.ENFORCE_PASSWORD_RULES_ON_CREATE,
    argon2: { memoryCost: e.ARGON2_MEMORY_KIB, timeCost: e.ARGON2_TIME_COST },
  };
}
