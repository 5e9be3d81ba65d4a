import type { Config } from '../../config';
import type { SessionEngine } from '../engine';
import { DockerEngine } from './docker';
import { MemoryEngine } from './memory';

/**
 * The engine `SESSIONS_ENGINE` names, or undefined (no engine: the session operations answer that
 * sessions are not available). Docker's containers are scoped by the service's database schema, so
 * services (or parallel test runs) sharing one engine keep to their own containers.
 */
export function engineFromConfig(config: Pick<Config, 'sessions' | 'database'>): SessionEngine | undefined {
  const { sessions } = config;
  switch (sessions.engine) {
    case 'docker':
      return new DockerEngine({
        ...sessions.docker,
        allowedCapabilities: sessions.allowedCapabilities,
        scope: config.database.schema,
      });
    case 'memory':
      return new MemoryEngine();
    default:
      return undefined;
  }
}
