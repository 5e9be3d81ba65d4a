import type { Kysely } from 'kysely';
import type { WorkspaceDatabase } from '../db/schema';
import { toKasmDate } from '../kasm/wire';
import { isPermission, PERMISSIONS, type Permission } from './permissions';
import { createApiKeysRepository } from './repository';

export const KEYS_USAGE = `  keys create --name NAME --permission P [--permission P ...] [--read-only] [--expires DATE]
  keys list
  keys disable API_KEY`;

/** `keys create|list|disable`: prints to `out`, returns the exit code. */
export async function keysCommand(
  db: Kysely<WorkspaceDatabase>,
  sub: string | undefined,
  options: { name?: string; permission?: string[]; 'read-only'?: boolean; expires?: string },
  positionals: string[],
  out: (line: string) => void,
): Promise<number> {
  const keys = createApiKeysRepository(db);
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
      const created = await keys.create({
        name: options.name,
        permissions: permissions as Permission[],
        readOnly: options['read-only'] ?? false,
        expires,
      });
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
      const apiKey = positionals[0];
      if (!apiKey) throw new Error('keys disable needs the API key');
      if (!(await keys.disable(apiKey))) throw new Error(`no such key: ${apiKey}`);
      out(`disabled ${apiKey}`);
      return 0;
    }
    default:
      throw new Error(`usage:\n${KEYS_USAGE}`);
  }
}
