import type { UserRow } from '../db/schema';
import { toKasmDate, toKasmId } from '../kasm/wire';
import type { MembershipRow } from './repository';
import type { User } from './schemas';

/** Users in Kasm's shape, each with its groups (`memberships` in the order they are listed in). */
export function toUsers(rows: UserRow[], memberships: MembershipRow[]): User[] {
  const groupsOf = new Map<string, User['groups']>();
  for (const m of memberships) {
    const list = groupsOf.get(m.user_id) ?? [];
    list.push({ name: m.name, group_id: toKasmId(m.group_id) });
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
