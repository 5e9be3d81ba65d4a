// The same-SQL baseline of the side-by-side mode (compare.ts): a bare Fastify server (default
// options, no logger, no plugins) and a bare pg pool, with one route that sends exactly the
// statements the service sent for that route (captured from PostgreSQL's statement log, same text,
// same parameters, same order), reads their rows, and answers the same JSON value the service
// answered, serialised per request with JSON.stringify (the bench checks the bytes are identical).
// So it is "HTTP + Fastify + the same SQL through pg + serialising the same JSON" and nothing else.
// A statement the service sent as a named prepared statement goes as one here too (a name per
// text, parsed once per connection, planned as PostgreSQL's default plan_cache_mode decides, as the
// service's are); one it sent unnamed stays unnamed (parsed and planned on every run).
// lib/baselines.ts compiles it (with bare-entry.ts) to JavaScript and runs `node bare.js <payload
// file>` with `PORT`. An entry point only: never import it for its values (only its types, which are
// erased).
import { fastify } from 'fastify';
import { Pool } from 'pg';
import { runBareServer } from './bare-entry';

/** One statement as the service sent it: its text and its parameters as PostgreSQL logged them. */
export interface CapturedStatement {
  text: string;
  /** Text values (null for SQL NULL), in order `$1`, `$2`, ... */
  parameters: (string | null)[];
  /** Sent as a named prepared statement (pg's query config `name`), not an unnamed one. */
  named: boolean;
}

/** The payload file of bare.ts. */
export interface BarePayload {
  method: 'GET' | 'POST';
  route: string;
  /** The connection string and the schema (as the service's pool: search_path, one per connection). */
  databaseUrl: string;
  schema: string;
  poolMax: number;
  statements: CapturedStatement[];
  /** The service's answer, parsed: serialised again on every request. */
  body: unknown;
  headers: Record<string, string>;
}

runBareServer<BarePayload>('bare', (payload) => {
  const pool = new Pool({
    connectionString: payload.databaseUrl,
    max: payload.poolMax,
    options: `-c search_path=${payload.schema}`,
  });
  // pg's query configs, made once: a name per distinct text among the named ones.
  const names = new Map<string, string>();
  const queries = payload.statements.map(({ text, parameters, named }) => {
    if (named && !names.has(text)) names.set(text, `bare_${names.size + 1}`);
    return { text, values: parameters, name: named ? names.get(text) : undefined };
  });
  pool.on('error', () => undefined); // an idle connection ended by the bench (statistics flush)
  // Statements in a transaction need one connection; otherwise each takes one, as Kysely does.
  const transactional = payload.statements.some((s) => /^\s*begin\b/i.test(s.text));
  const app = fastify({ logger: false });
  app.route({
    method: payload.method,
    url: payload.route,
    handler: async (_request, reply) => {
      const rows: unknown[] = [];
      if (transactional) {
        const client = await pool.connect();
        try {
          for (const query of queries) rows.push((await client.query(query)).rows);
        } finally {
          client.release();
        }
      } else {
        for (const query of queries) rows.push((await pool.query(query)).rows);
      }
      for (const [name, value] of Object.entries(payload.headers)) reply.header(name, value);
      return reply.send(JSON.stringify(payload.body));
    },
  });
  return { app, release: () => pool.end() };
});
