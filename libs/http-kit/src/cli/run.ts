import type { FastifyInstance } from 'fastify';
import closeWithGrace from 'close-with-grace';
import { tuneRuntime } from './runtime';

export interface ListenOptions {
  port: number;
  host: string;
  /** How long in-flight requests may take to finish after SIGTERM/SIGINT before the process exits anyway. */
  graceMs?: number;
  /**
   * After SIGTERM/SIGINT, how long the service keeps serving while readiness answers 503 (so a load
   * balancer takes it out first), before it stops accepting connections. 0: at once.
   */
  shutdownDrainMs?: number;
}

/**
 * Listens and installs graceful shutdown: on SIGTERM or SIGINT the server (after `shutdownDrainMs` of
 * serving while not ready) stops accepting connections, lets in-flight requests finish, runs
 * `onClose` hooks (closing the database) and exits.
 */
export async function listenWithGracefulShutdown(
  app: FastifyInstance,
  options: ListenOptions,
): Promise<void> {
  try {
    await app.listen({ port: options.port, host: options.host });
  } catch (error) {
    await app.close();
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      // A second `npm start`, or another program on the port: say so, not a stack trace.
      throw new Error(
        `port ${options.port} on ${options.host} is already in use (is this service running already?): stop that process or set PORT to a free port`,
      );
    }
    throw error;
  }
  const drainMs = options.shutdownDrainMs ?? 0;
  const delay = (options.graceMs ?? 10_000) + drainMs;
  closeWithGrace({ delay, logger: app.log }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'shutting down after an error');
    else {
      app.log.info({ signal, drainMs }, 'shutting down gracefully');
      if (drainMs > 0) {
        app.beginLeaving();
        await new Promise((resolve) => setTimeout(resolve, drainMs));
      }
    }
    await app.close();
  });
}

/**
 * What `main.ts` and a CLI's `serve` both do: tune the runtime (see `tuneRuntime`), build the service
 * from its config, then listen.
 */
export async function serve<C extends ListenOptions>(
  buildApp: (config: C) => Promise<FastifyInstance>,
  config: C,
): Promise<void> {
  tuneRuntime();
  await listenWithGracefulShutdown(await buildApp(config), {
    port: config.port,
    host: config.host,
    graceMs: config.graceMs,
    shutdownDrainMs: config.shutdownDrainMs,
  });
}

/**
 * A service's whole `main.ts`: loads the config from the environment, builds and serves the app. A
 * failure is one line when it is a plain Error (a bad config, a port in use), the whole error when it
 * carries a system code; either way the process exits 1.
 */
export function runMain<C extends ListenOptions>(
  buildApp: (config: C) => Promise<FastifyInstance>,
  loadConfig: () => C,
): void {
  Promise.resolve()
    .then(() => serve(buildApp, loadConfig()))
    .catch((error) => {
      console.error(error instanceof Error && !(error as NodeJS.ErrnoException).code ? error.message : error);
      process.exit(1);
    });
}
