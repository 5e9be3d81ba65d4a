import type { ImageRow } from '../db/schema';
import type { SessionContainerSpec } from './engine';

/** What the operator allows of a workspace's `run_config`, and the default web port. */
export interface SpecSettings {
  /** Capabilities `run_config.cap_add` may add back (upper case, no `CAP_` prefix). */
  allowedCapabilities: readonly string[];
  webPort: number;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const UNITS: Record<string, number> = { '': 1, b: 1, k: 2 ** 10, m: 2 ** 20, g: 2 ** 30 };

/**
 * A size as Docker's Python SDK takes `shm_size` (Kasm's `run_config` is its keyword arguments): a
 * number of bytes, or text like `512m` / `1g`; undefined for anything else.
 */
export function bytesOf(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value > 0 ? value : undefined;
  if (typeof value !== 'string') return undefined;
  const match = /^\s*(\d+)\s*([bkmg]?)b?\s*$/i.exec(value);
  if (!match) return undefined;
  const bytes = Number(match[1]) * UNITS[match[2].toLowerCase()];
  return Number.isSafeInteger(bytes) && bytes > 0 ? bytes : undefined;
}

/** `run_config.environment` as Docker's SDK takes it: an object, or a list of `KEY=value`; text only. */
function environmentOf(value: unknown): Record<string, string> {
  const env: Record<string, string> = {};
  if (isRecord(value)) {
    for (const [key, v] of Object.entries(value))
      if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') env[key] = String(v);
  } else if (Array.isArray(value)) {
    for (const item of value) {
      if (typeof item !== 'string') continue;
      const at = item.indexOf('=');
      if (at > 0) env[item.slice(0, at)] = item.slice(at + 1);
    }
  }
  return env;
}

/** The port the workspace serves on: `run_config.web_port` (our extension) or the operator's default. */
export function webPortOf(
  image: Pick<ImageRow, 'run_config'>,
  settings: Pick<SpecSettings, 'webPort'>,
): number {
  const runConfig = isRecord(image.run_config) ? image.run_config : {};
  const port = runConfig.web_port;
  return typeof port === 'number' && Number.isInteger(port) && port >= 1 && port <= 65535
    ? port
    : settings.webPort;
}

/**
 * The container of a session, from its image's registry entry and the request: the image reference,
 * `run_config`'s hostname, environment (the request's wins), `shm_size` and `cap_add` (only what
 * the operator allows), the entry's `cores` and `memory` (MB). Anything else `run_config` asks for
 * (privileged, volumes, devices, network mode…) is not applied: never privileged, no host mount.
 */
export function containerSpecOf(
  session: { sessionId: string; userId: string; environment: Record<string, string> },
  image: ImageRow,
  settings: SpecSettings,
): SessionContainerSpec {
  const runConfig = isRecord(image.run_config) ? image.run_config : {};
  const capAdd = Array.isArray(runConfig.cap_add)
    ? runConfig.cap_add
        .filter((c): c is string => typeof c === 'string')
        .map((c) => c.trim().toUpperCase().replace(/^CAP_/, ''))
        .filter((c, i, all) => settings.allowedCapabilities.includes(c) && all.indexOf(c) === i)
    : [];
  const hostname =
    typeof runConfig.hostname === 'string' && runConfig.hostname.trim() ? runConfig.hostname : undefined;
  return {
    sessionId: session.sessionId,
    userId: session.userId,
    image: image.name,
    registry: image.docker_registry ?? undefined,
    hostname,
    env: { ...environmentOf(runConfig.environment), ...session.environment },
    shmSizeBytes: bytesOf(runConfig.shm_size),
    cores: image.cores ?? undefined,
    memoryBytes: image.memory === null ? undefined : image.memory * 2 ** 20,
    capAdd,
    webPort: webPortOf(image, settings),
  };
}
