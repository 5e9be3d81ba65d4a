import type { onRequestHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import { createSecretsRepository, isDatabaseUnavailable, sqlState } from '@platform/db';
import { ServiceUnavailableError } from '@platform/http-kit';

/** The key of access and reset tokens and of signed cookies. */
export interface SecretKey {
  /** SECRET_KEY when set, else the key the migrations made in the service's schema. */
  current(): string;
}

declare module 'fastify' {
  interface FastifyInstance {
    secretKey: SecretKey;
  }
}

/** SQLSTATE undefined_table: the migration that makes the key has not run yet (a Job runs them). */
const UNDEFINED_TABLE = '42P01';

/** Worth waiting for: the database away, or its schema not migrated yet. */
const transient = (error: unknown) => isDatabaseUnavailable(error) || sqlState(error) === UNDEFINED_TABLE;

/**
 * The service's secret key. SECRET_KEY when set; unset (in every mode: there is no default), the
 * random key the migration 2026-11-28T1300_service_secrets made in the database, read once at
 * start: every replica signs with the same key, tokens survive restarts, and no public value is
 * ever a default. When the database cannot give it at start (away, or not migrated yet: the
 * database plugin then starts the app not ready), the routes registered after this plugin first
 * read it, answering 503 until they can; once read, nothing runs per request.
 */
export default fp(
  async function secretKey(app) {
    let key = app.config.secretKey;
    if (key === undefined) {
      const secrets = createSecretsRepository(app.database.db);
      let reading: Promise<string> | undefined;
      /** Reads the key once; a failed read is retried by the next request. */
      const read = () =>
        (reading ??= secrets.read('secret_key').then(
          (value) => (key = value),
          (error: unknown) => {
            reading = undefined;
            throw error;
          },
        ));
      try {
        await read();
      } catch (error) {
        if (!transient(error)) throw error;
        const awaitKey: onRequestHookHandler = (_request, _reply, done) => {
          if (key !== undefined) return done();
          read().then(
            () => done(),
            (error: unknown) =>
              done(transient(error) ? new ServiceUnavailableError({ cause: error }) : (error as Error)),
          );
        };
        // First, before the token check that needs the key (and before the database plugin's own
        // gate, whose 503 this one gives too while the schema is not migrated).
        app.addHook('onRoute', (route) => {
          route.onRequest = [awaitKey, ...(route.onRequest ? [route.onRequest].flat() : [])];
        });
      }
    }
    app.decorate('secretKey', {
      current() {
        // Only the hook above lets a request reach a route before the key is known.
        if (key === undefined)
          throw new ServiceUnavailableError({ cause: new Error('secret key not read yet') });
        return key;
      },
    });
  },
  { name: 'secret-key', dependencies: ['database'], decorators: { fastify: ['config'] }, fastify: '5.x' },
);
