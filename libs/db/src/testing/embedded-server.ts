import { assertSchemaName } from '../connection';

export interface EmbeddedServer {
  /** A PostgreSQL connection string reaching the embedded database over TCP. */
  url: string;
  host: string;
  port: number;
  stop(): Promise<void>;
}

/**
 * An in-memory embedded database served over the PostgreSQL wire protocol on loopback, so tests
 * that need a network path to the database (outages, several processes) run without PostgreSQL.
 *
 * Every wire connection shares PGlite's one session, and the server ignores startup options such
 * as `search_path`: so the server serves one schema, set here on that session.
 */
export async function startEmbeddedServer(schema: string): Promise<EmbeddedServer> {
  assertSchemaName(schema);
  const { PGlite } = await import('@electric-sql/pglite');
  const { PGLiteSocketServer } = await import('@electric-sql/pglite-socket');
  const db = await PGlite.create();
  await db.exec(`CREATE SCHEMA IF NOT EXISTS "${schema}"; SET search_path TO "${schema}";`);
  const server = new PGLiteSocketServer({ db: db as never, host: '127.0.0.1', port: 0, maxConnections: 32 });
  await server.start();
  const [host, port] = server.getServerConn().split(':');
  return {
    url: `postgres://postgres@${host}:${port}/postgres`,
    host,
    port: Number(port),
    async stop() {
      await server.stop();
      await db.close();
    },
  };
}
