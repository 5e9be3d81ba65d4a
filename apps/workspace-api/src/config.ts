import { Type } from '@sinclair/typebox';
import { EnvFlag, parseEnv } from '@platform/schema';
import { serviceConfig, serviceEnv, type ServiceConfig } from '@platform/http-kit';

/** The service's environment, one schema: defaults here are the documented ones. */
export const EnvSchema = Type.Object({
  ...serviceEnv({ port: 8080, schema: 'workspace' }),
  BOOTSTRAP_API_KEY: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9]{1,64}$' })),
  BOOTSTRAP_API_KEY_SECRET: Type.Optional(Type.String({ minLength: 1 })),
  ENFORCE_PASSWORD_RULES_ON_CREATE: EnvFlag(false),
  /** argon2id cost; tests lower it. Defaults are the library's (~150-190 ms a hash here). */
  ARGON2_MEMORY_KIB: Type.Integer({ minimum: 8, default: 65536 }),
  ARGON2_TIME_COST: Type.Integer({ minimum: 1, default: 3 }),
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
