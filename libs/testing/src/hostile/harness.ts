/** Storms as tests run them: against a service's test server, and against the kit's dialect test app. */
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { ErrorDialect } from '@platform/http-kit';
import {
  DIALECT_TEST_BODY_LIMIT,
  dialectTestApp,
  STRICT_REQUEST_RULES,
  type DialectTestAppOptions,
} from '../dialect';
import { describeStorm, hostileSeed, runHostileStorm, type StormOptions, type StormReport } from './storm';

/**
 * A service's storm: against its test server (its error dialect and body limit read from the app),
 * from HOSTILE_SEED or the test's `seed`, logged in one line (the test asserts it clean).
 */
export async function runServiceStorm(
  name: string,
  server: { app: FastifyInstance; baseUrl: string },
  storm: Omit<StormOptions, 'baseUrl' | 'dialect' | 'bodyLimit'>,
): Promise<StormReport> {
  const { bodyLimit } = server.app.initialConfig;
  if (bodyLimit === undefined) throw new Error(`${name}: the app has no body limit`);
  const report = await runHostileStorm({
    ...storm,
    seed: hostileSeed(storm.seed),
    baseUrl: server.baseUrl,
    dialect: server.app.errorDialect,
    bodyLimit,
  });
  console.log(`${name} storm: ${describeStorm(report)}`);
  return report;
}

/**
 * Runs a storm against `dialectTestApp(dialect, app)` listening on a random port of 127.0.0.1 (its
 * body limit and request rules), and closes it after.
 */
export async function stormDialectTestApp(
  dialect: ErrorDialect,
  storm: Omit<StormOptions, 'baseUrl' | 'dialect' | 'bodyLimit' | 'requestRules'>,
  app: DialectTestAppOptions = {},
): Promise<StormReport> {
  const server = await dialectTestApp(dialect, app);
  try {
    await server.listen({ port: 0, host: '127.0.0.1' });
    const { port } = server.server.address() as AddressInfo;
    return await runHostileStorm({
      ...storm,
      baseUrl: `http://127.0.0.1:${port}`,
      dialect,
      bodyLimit: DIALECT_TEST_BODY_LIMIT,
      requestRules: app.requestRules ?? STRICT_REQUEST_RULES,
    });
  } finally {
    await server.close();
  }
}
