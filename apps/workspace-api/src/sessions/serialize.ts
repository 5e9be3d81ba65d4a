import type { SessionRow } from '../db/schema';
import { toKasmDate, toKasmId } from '../wire/kasm';
import type { SessionView } from './repository';
import type { Kasm, UserKasm } from './schemas';

/** Sessions run in one zone here (Kasm's default zone's name). */
export const ZONE_NAME = 'default';

const server = (row: Pick<SessionRow, 'hostname' | 'web_port'>) => ({
  server_id: null,
  hostname: row.hostname,
  port: row.web_port,
});

/** A session in Kasm's `kasm` shape. */
export function toKasm(row: SessionView): Kasm {
  const imageId = row.image_id === null ? null : toKasmId(row.image_id);
  return {
    kasm_id: toKasmId(row.id),
    user_id: toKasmId(row.user_id),
    image_id: imageId,
    image: {
      image_id: imageId,
      name: row.image_name,
      friendly_name: row.image_friendly_name,
      image_src: row.image_src,
    },
    operational_status: row.state,
    container_id: row.container_id,
    port: row.web_port,
    start_date: toKasmDate(row.created),
    keepalive_date: toKasmDate(row.keepalive),
    expiration_date: toKasmDate(row.expiration),
    user: { username: row.username },
    server: { ...server(row), provider: row.provider, zone_name: ZONE_NAME },
  };
}

/** A session as a user object lists it (Kasm's `kasms[]`). */
export function toUserKasm(
  row: Pick<SessionRow, 'id' | 'created' | 'keepalive' | 'expiration' | 'hostname' | 'web_port'>,
): UserKasm {
  return {
    kasm_id: toKasmId(row.id),
    start_date: toKasmDate(row.created),
    keepalive_date: toKasmDate(row.keepalive),
    expiration_date: toKasmDate(row.expiration),
    server: server(row),
  };
}
