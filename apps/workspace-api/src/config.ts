import { Type } from '@sinclair/typebox';
import { EnvFlag, parseEnv } from '@platform/schema';
import {
  passwordHashingConfig,
  passwordHashingEnv,
  serviceConfig,
  serviceEnv,
  type PasswordHashingConfig,
  type ServiceConfig,
} from '@platform/http-kit';

/** The service's environment, one schema: defaults here are the documented ones. */
export const EnvSchema = Type.Object({
  ...serviceEnv({ port: 8080, schema: 'workspace' }),
  BOOTSTRAP_API_KEY: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9]{1,64}$' })),
  BOOTSTRAP_API_KEY_SECRET: Type.Optional(Type.String({ minLength: 1 })),
  ENFORCE_PASSWORD_RULES_ON_CREATE: EnvFlag(false),
  ...passwordHashingEnv(),
});

export interface Config extends ServiceConfig {
  bootstrapKey?: { apiKey: string; secret: string };
  enforcePasswordRulesOnCreate: boolean;
  /** argon2id cost (OWASP's by default) and how many hashes run or wait at once. */
  argon2: PasswordHashingConfig;
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
    argon2: passwordHashingConfig(e),
  };
}
