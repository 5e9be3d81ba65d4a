import { Type } from '@sinclair/typebox';
import { parseEnv } from '@platform/schema';
import { eventStreamConfig, eventStreamEnv, serviceConfig, serviceEnv } from '@platform/http-kit';

const perWindow = (fallback: number, description: string) =>
  Type.Integer({ minimum: 1, default: fallback, description });

/**
 * The write limits' defaults, from a lesson's pace (README, "Write limits"): a student posts a few
 * times and reacts or replies a few dozen times in a lesson, in bursts of about one click a second;
 * a class is 30–40 students, usually behind one school router (one address).
 */
export const WRITE_LIMIT_DEFAULTS = {
  /** One browser: a write a second for a whole minute, well above a student's busiest minute. */
  perClient: 60,
  /** One address, all its browsers together: 40 students each writing every 2 s for a minute. */
  perAddress: 1200,
  /** One address, requests without a (valid) client id: a person with curl, not a flood. */
  withoutClientId: 30,
  windowSeconds: 60,
} as const;

/** The service's environment, one schema: defaults here are the documented ones. */
export const EnvSchema = Type.Object({
  ...serviceEnv({ port: 8887, schema: 'microblog' }),
  ...eventStreamEnv(),
  WRITE_LIMIT_PER_CLIENT: perWindow(
    WRITE_LIMIT_DEFAULTS.perClient,
    'Writes per window per browser (the panel’s signed client id cookie)',
  ),
  WRITE_LIMIT_PER_ADDRESS: perWindow(
    WRITE_LIMIT_DEFAULTS.perAddress,
    'Writes per window per client address by all its browsers together (a classroom behind one router)',
  ),
  // No schema default: unset, the former WRITE_RATE_LIMIT is read before the default applies.
  WRITE_LIMIT_WITHOUT_CLIENT_ID: Type.Optional(
    Type.Integer({
      minimum: 1,
      description: `Writes per window per client address by requests without a valid client id (scripts, curl); default ${WRITE_LIMIT_DEFAULTS.withoutClientId}`,
    }),
  ),
  WRITE_RATE_LIMIT: Type.Optional(
    Type.Integer({
      minimum: 1,
      description: 'Former name of WRITE_LIMIT_WITHOUT_CLIENT_ID, still read when that one is unset',
    }),
  ),
  WRITE_LIMIT_WINDOW_SECONDS: perWindow(
    WRITE_LIMIT_DEFAULTS.windowSeconds,
    'Length of the write limits’ window in seconds',
  ),
});

/** Largest request body the contract accepts (16 KiB); not configurable. */
export const BODY_LIMIT = 16 * 1024;

/** The service's configuration: what `loadConfig` makes of `EnvSchema` (each setting described once). */
export type Config = ReturnType<typeof loadConfig>;

/** Writes allowed per window, by scope (see `plugins/external/rate-limit.ts`). */
export type WriteLimits = Config['writeLimits'];

export function loadConfig(env: Record<string, string | undefined> = process.env) {
  const e = parseEnv(EnvSchema, env);
  const service = serviceConfig(e);
  return {
    ...service,
    /** The live stream (`GET /api/microblog/events`): its listener, caps, heartbeat and pruning. */
    events: eventStreamConfig(e, service.maxConnections),
    writeLimits: {
      perClient: e.WRITE_LIMIT_PER_CLIENT,
      perAddress: e.WRITE_LIMIT_PER_ADDRESS,
      withoutClientId:
        e.WRITE_LIMIT_WITHOUT_CLIENT_ID ?? e.WRITE_RATE_LIMIT ?? WRITE_LIMIT_DEFAULTS.withoutClientId,
      windowMs: e.WRITE_LIMIT_WINDOW_SECONDS * 1000,
    },
  };
}
