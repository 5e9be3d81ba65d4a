import { Type, type Static, type TProperties } from '@sinclair/typebox';
import { annotate, Nullable } from '@platform/schema';
import { OperationBody } from '../wire/operation';
import { IdInput, KasmDate, KasmId } from '../wire/kasm';
import { InstalledEntry, type WorkspaceEntry } from './registry';

/** An installed workspace: the registry entry's fields plus `image_id`, `enabled`, `created`. */
export const Image = Type.Object(
  {
    // `image_id` and `name` lead, as they always have (answers are written in schema order).
    ...{ image_id: KasmId, name: InstalledEntry.properties.name },
    ...InstalledEntry.properties,
    enabled: Type.Boolean({ description: 'Always true for an installed workspace' }),
    created: KasmDate,
  },
  {
    $id: 'Image',
    description: 'An installed workspace (image); optional entry fields that were absent are null',
  },
);
export type Image = Static<typeof Image>;

export const ImageResponse = Type.Object({ image: Type.Ref(Image) });
export const ImagesResponse = Type.Object({ images: Type.Array(Type.Ref(Image)) });

/**
 * A registry entry, for the documentation of `workspace`, which the body declares loosely: the
 * service checks it against `WorkspaceEntry` so that every failure is worded Kasm's way.
 */
export const WORKSPACE_EXAMPLE = {
  friendly_name: 'Chrome',
  name: 'kasmweb/chrome:1.16.0',
  description: 'Chrome is a cross-platform web browser developed by Google.',
  image_src: 'chrome.png',
  architecture: ['amd64', 'arm64'],
  compatibility: ['1.15.x', '1.16.x'],
  uncompressed_size_mb: 2390,
  categories: ['Browser'],
  docker_registry: 'https://index.docker.io/v1/',
  run_config: { hostname: 'kasm' },
  exec_config: { go: { cmd: 'bash -c \'/dockerstartup/custom_startup.sh --go --url "$KASM_URL"\'' } },
  cores: 2,
  memory: 2768,
} satisfies WorkspaceEntry;

/*
 * Request bodies declare types only: every field is optional so each operation answers a missing
 * field with Kasm's own message; `null` counts as absent.
 */
const Body = OperationBody;
const target = <T extends TProperties>(properties: T, description: string) =>
  Type.Optional(Nullable(Type.Object(properties, { description })));
const Id = (description: string) => Type.Optional(Nullable(annotate(IdInput, { description })));

const TargetImage = target(
  { image_id: Id('The image (32 hex characters; dashed UUIDs accepted)') },
  '`image_id` is required',
);
const TargetGroup = target(
  { group_id: Id('The group (32 hex characters; dashed UUIDs accepted)') },
  '`group_id` is required',
);

export const InstallWorkspaceBody = Body({
  workspace: Type.Optional(
    Type.Unknown({
      description:
        'A workspace registry entry (schema 1.0). Required: `friendly_name`, `name` (`<repository>:<tag>`), `description`, ' +
        '`image_src`, `architecture` (non-empty subset of amd64, arm64), `compatibility` (non-empty list of `MAJOR.MINOR.x`), ' +
        '`uncompressed_size_mb` (integer >= 0). Optional: `categories`, `docker_registry` (URL), `run_config` (object), ' +
        '`exec_config` (object; `go`, `assign`, `first_launch` each `{cmd}`), `notes`, `cores` (number), `memory` (MB, integer), ' +
        '`gpu_count` (integer). Unknown fields are ignored.',
      examples: [WORKSPACE_EXAMPLE],
    }),
  ),
});
export const DeleteImageBody = Body({ target_image: TargetImage });
export const GroupImageBody = Body({ target_group: TargetGroup, target_image: TargetImage });
export type GroupImageBody = Static<typeof GroupImageBody>;
export const GetImagesGroupBody = Body({ target_group: TargetGroup });
export const GetUserImagesBody = Body({
  target_user: target(
    { user_id: Id('The user (32 hex characters; dashed UUIDs accepted)') },
    '`user_id` is required',
  ),
});
export const GetImagesBody = Type.Optional(OperationBody());
