import type { Kysely } from 'kysely';
import type { UserRow, WorkspaceDatabase } from '../db/schema';
import { toKasmDate, toKasmId } from '../kasm/wire';
import type { User } from './schemas';

/**
 * Users in Kasm's shape with their groups, in two statements whatever the number of users (the
 * rows, then all their memberships).
 */
export async function serializeUsers(db: Kysely<WorkspaceDatabase>, rows: UserRow[]): Promise<User[]> {
  if (!rows.length) return [];
  const memberships = await db
    .selectFrom('user_groups')
    .innerJoin('groups', 'groups.id', 'user_groups.group_id')
    .select(['user_groups.user_id', 'groups.id', 'groups.name'])
    .where(
      'user_groups.user_id',
      'in',
      rows.map((r) => r.id),
    )
    .orderBy('groups.priority', 'desc')
    .orderBy('groups.name')
    .execute();
  const groupsOf = new Map<string, { name: string; group_id: string }[]>();
  for (const m of memberships) {
    const list = groupsOf.get(m.user_id) ?? [];
    list.push({ name: m.name, group_id: toKasmId(m.id) });
    groupsOf.set(m.user_id, list);
  }
  return rows.map((row) => ({
    user_id: toKasmId(row.id),
    username: row.username,
    first_name: row.first_name,
    last_name: row.last_name,
    locked: row.locked,
    disabled: row.disabled,
    organization: row.organization,
    phone: row.phone,
    notes: row.notes,
    realm: row.realm,
    last_session: toKasmDate(row.last_session),
    created: toKasmDate(row.created),
    groups: groupsOf.get(row.id) ?? [],
  }));
}

export async function serializeUser(db: Kysely<WorkspaceDatabase>, row: UserRow): Promise<User> {
  return (await serializeUsers(db, [row]))[0];
}
