import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import {
  AccessDenied,
  AccessExpired,
  ImpersonationRefused,
  InvalidActingUser,
  InvalidRequest,
  Unauthorized,
} from '../../errors';
import type { ApiKeyRow, UserRow } from '../../db/schema';
import { createApiKeysRepository } from '../../auth/repository';
import { secretMatches, hashSecret } from '../../auth/keys';
import { keyHas, type OperationAccess } from '../../auth/permissions';
import { createUsersRepository } from '../../users/repository';
import { parseId } from '../../wire/kasm';

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Every route under the protected prefix (`METHOD /path`) with its access rule (undefined: refused
     * to everyone), as registered: what a review compares with the permission table.
     */
    guardedRoutes: ReadonlyMap<string, OperationAccess | undefined>;
  }
  interface FastifyRequest {
    /** The API key that authenticated this request (Kasm operations only). */
    apiKey?: ApiKeyRow;
    /**
     * The user the request acts for: the body's top-level `user_id` on an operation that allows it
     * (`OperationAccess.actsForUser`), checked here; undefined when none was sent.
     */
    actingUser?: UserRow;
  }
}

const header = (request: FastifyRequest, name: string) => {
  const value = request.headers[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
};
const bodyField = (request: FastifyRequest, name: string) => {
  const body = request.body as Record<string, unknown> | null | undefined;
  const value = body && typeof body === 'object' ? body[name] : undefined;
  return typeof value === 'string' && value !== '' ? value : undefined;
};

// Compared against when the key is unknown, so both cases take the same time.
const DECOY = hashSecret('decoy');

export interface ApiKeyAuthOptions {
  /** Every route under this path needs an `access` rule: one without is refused (fail closed). */
  protectedPrefix: string;
}

/**
 * Kasm's credential check, before any validation of the operation's body: the key pair from the
 * `api-key`/`api-key-secret` headers (which win) or the body, then enabled, secret, expiry,
 * read-only and permission, with Kasm's exact statuses and messages.
 */
export default fp<ApiKeyAuthOptions>(
  async function apiKeyAuth(app, { protectedPrefix }) {
    const keys = createApiKeysRepository(app.database.db);
    const users = createUsersRepository(app.database.db);
    const prefix = protectedPrefix.endsWith('/') ? protectedPrefix : `${protectedPrefix}/`;
    const guarded = new Map<string, OperationAccess | undefined>();
    app.decorate('guardedRoutes', guarded);
    app.addHook('onRoute', (route) => {
      if (!route.url.startsWith(prefix)) return;
      for (const method of ([] as string[]).concat(route.method))
        guarded.set(`${method} ${route.url}`, route.config?.access);
    });

    app.addHook('preValidation', async (request) => {
      const access: OperationAccess | undefined = request.routeOptions.config.access;
      if (!access) {
        // A route that forgot its rule is nobody's, not everybody's. Unmatched paths (404, no
        // route url) keep their own answer.
        if (request.routeOptions.url?.startsWith(prefix)) throw new Unauthorized();
        return;
      }
      const apiKey = header(request, 'api-key') ?? bodyField(request, 'api_key');
      const secret = header(request, 'api-key-secret') ?? bodyField(request, 'api_key_secret');
      if (!apiKey || !secret) throw new InvalidRequest();

      const key = await keys.findByKey(apiKey);
      const matches = secretMatches(secret, key?.secret_salt ?? DECOY.salt, key?.secret_hash ?? DECOY.hash);
      if (!key || !key.enabled || !matches) throw new AccessDenied();
      if (key.expires && key.expires.getTime() <= Date.now()) throw new AccessExpired();
      if (access.writes && key.read_only) throw new Unauthorized();
      const granted =
        access.permission === 'any' ||
        keyHas(key, access.permission) ||
        (access.orPermission !== undefined && keyHas(key, access.orPermission));
      if (!granted) throw new Unauthorized();
      request.apiKey = key;

      // Kasm's impersonation: a `user_id` (a non-blank string; null and blanks are absent) makes the
      // request the user's, for a key that may log in as users (`User` + `Users Auth Session`).
      const userId = access.actsForUser ? bodyField(request, 'user_id') : undefined;
      if (userId === undefined || userId.trim() === '') return;
      if (!keyHas(key, 'User') || !keyHas(key, 'Users Auth Session'))
        throw new ImpersonationRefused(key.name);
      const id = parseId(userId);
      const user = id === undefined ? undefined : await users.findById(id);
      if (!user) throw new InvalidActingUser(userId);
      request.actingUser = user;
    });
  },
  { name: 'api-key-auth', dependencies: ['database'] },
);
