import type { ImageRow } from '../db/schema';
import { toKasmDate, toKasmId } from '../wire/kasm';
import type { Image } from './schemas';

/** The wire form of an installed image: the entry's fields, `image_id`, `enabled`, `created`; memory stays in MB. */
export function toImage(row: ImageRow): Image {
  return {
    image_id: toKasmId(row.id),
    name: row.name,
    friendly_name: row.friendly_name,
    description: row.description,
    image_src: row.image_src,
    architecture: row.architecture as Image['architecture'],
    compatibility: row.compatibility,
    uncompressed_size_mb: row.uncompressed_size_mb,
    categories: row.categories,
    docker_registry: row.docker_registry,
    // JSON columns: what was stored is what the entry had (checked on installation).
    run_config: (row.run_config ?? null) as Image['run_config'],
    exec_config: (row.exec_config ?? null) as Image['exec_config'],
    notes: row.notes,
    cores: row.cores,
    memory: row.memory,
    gpu_count: row.gpu_count,
    enabled: row.enabled,
    created: toKasmDate(row.created),
  };
}
