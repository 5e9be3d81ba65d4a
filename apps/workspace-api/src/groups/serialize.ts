import type { GroupRow } from '../db/schema';
import { toKasmId } from '../wire/kasm';
import type { Group } from './schemas';

export function toGroup(row: GroupRow): Group {
  return {
    group_id: toKasmId(row.id),
    name: row.name,
    description: row.description,
    priority: row.priority,
    is_system: row.is_system,
  };
}
