import type { Kysely } from 'kysely';
import { UsageError } from '@platform/http-kit';
import type { WorkspaceDatabase } from '../db/schema';
import { toKasmDate } from '../wire/kasm';
import { isPermission, PERMISSIONS, type Permission } from './permissions';
import { createApiKeysRepository, type NewApiKey } from './repository';

export const KEYS_USAGE = `  keys create --name NAME --permission P [--permission P ...] [--read-only] [--expires DATE]
  keys list
  keys disable API_KEY`;

export interface KeysOptions {
  name?: string;
  permission?: string[];
  'read-only'?: boolean;
  expires?: string;
}

/** A `keys` command line, checked: what to do, with what. */
export type KeysAction =
  { sub: 'create'; key: NewApiKey } | { sub: 'list' } | { sub: 'disable'; apiKey: string };

/**
 * Checks a `keys` command line without touching the database: throws the message a bad one gets (a
 * `UsageError` when the subcommand is not one of these).
 */
export function parseKeysArguments(
  sub: string | undefined,
  options: KeysOptions,
  positionals: string[],
): KeysAction {
  switch (sub) {
    case 'create': {
      if (!options.name) throw new Error('keys create needs --name');
      const permissions = options.permission ?? [];
      if (!permissions.length)
        throw new Error(`keys create needs at least one --permission (one of: ${PERMISSIONS.join(', ')})`);
      const unknown = permissions.filter((p) => !isPermission(p));
      if (unknown.length)
        throw new Error(
          `unknown permission ${unknown.map((p) => JSON.stringify(p)).join(', ')}; use: ${PERMISSIONS.join(', ')}`,
        );
      let expires: Date | null = null;
      if (options.expires) {
        expires = new Date(
          /[zZ]|[+-]\d\d:?\d\d$/.test(options.expires)
            ? options.expires
            : `${options.expires.replace(' ', 'T')}Z`,
        );
        if (Number.isNaN(expires.getTime())) throw new Error(`--expires is not a date: ${options.expires}`);
      }
      return {
        sub,
        key: {
          name: options.name,
          permissions: permissions as Permission[],
          readOnly: options['read-only'] ?? false,
          expires,
        },
      };
    }
    case 'list':
      return { sub };
    case 'disable': {
      const apiKey = positionals[0];
      if (!apiKey) throw new Error('keys disable needs the API key');
      return { sub, apiKey };
    }
    default:
      throw new UsageError(`keys takes create, list or disable${sub ? `, not ${sub}` : ''}`);
  }
}

/** `keys create|list|disable`: prints to `out`, returns the exit code. */
export async function keysCommand(
  db: Kysely<WorkspaceDatabase>,
  sub: string | undefined,
  options: KeysOptions,
  positionals: string[],
  out: (line: string) => void,
): Promise<number> {
  const action = parseKeysArguments(sub, options, positionals);
  const keys = createApiKeysRepository(db);
  switch (action.sub) {
    case 'create': {
      const created = await keys.create(action.key);
      out(`api_key:        ${created.apiKey}`);
      out(`api_key_secret: ${created.secret}`);
      out('The secret is shown only now; store it safely.');
      return 0;
    }
    case 'list': {
      for (const k of await keys.list()) {
        const state = [
          k.enabled ? 'enabled' : 'disabled',
          k.read_only ? 'read-only' : null,
          k.expires ? `expires ${toKasmDate(k.expires)}` : null,
        ]
          .filter(Boolean)
          .join(', ');
        out(`${k.api_key}  ${k.name}  [${state}]  ${k.permissions.join(', ')}`);
      }
      return 0;
    }
    case 'disable': {
      if (!(await keys.disable(action.apiKey))) throw new Error(`no such key: ${action.apiKey}`);
      out(`disabled ${action.apiKey}`);
      return 0;
    }
  }
}
