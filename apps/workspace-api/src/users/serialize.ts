import type { UserRow } from '../db/schema';
import { toKasmDate, toKasmId } from '../wire/kasm';
import type { ListedUserRow, MembershipRow } from './repository';
import type { User, UserWithKasms } from './schemas';
import { toUserKasm } from '../sessions/serialize';

/** Users in Kasm's shape, each with its groups (`memberships` in the order they are listed in). */
export function toUsers(rows: UserRow[], memberships: MembershipRow[]): User[] {
  const groupsOf = new Map<string, User['groups']>();
  for (const m of memberships) {
    const list = groupsOf.get(m.user_id) ?? [];
    list.push({ name: m.name, group_id: toKasmId(m.group_id) });
    groupsOf.set(m.user_id, list);
  }
  return rows.map((row) => toUser(row, groupsOf.get(row.id) ?? []));
}

/** Users as get_users lists them, their groups and live sessions read with them. */
export const toListedUsers = (rows: ListedUserRow[]): UserWithKasms[] =>
  rows.map((row) => ({
    ...toUser(
      row,
      row.groups.map((g) => ({ name: g.name, group_id: toKasmId(g.group_id) })),
    ),
    kasms: row.kasms.map((s) =>
      toUserKasm({
        ...s,
        created: new Date(s.created),
        keepalive: new Date(s.keepalive),
        expiration: new Date(s.expiration),
      }),
    ),
  }));

function toUser(row: Omit<UserRow, 'password_hash'>, groups: User['groups']): User {
  return {
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
    groups,
  };
}
