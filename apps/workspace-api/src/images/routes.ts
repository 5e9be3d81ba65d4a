import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { annotate } from '@platform/schema';
import type { ImageRow } from '../db/schema';
import {
  GroupOrImageMissing,
  ImageExists,
  InvalidGroupId,
  InvalidImageId,
  InvalidWorkspace,
  MissingGroupOrImage,
  MissingParameters,
  UnknownUser,
} from '../errors';
import { operation } from '../kasm/operation';
import { parseId, toKasmDate, toKasmId } from '../kasm/wire';
import { checkWorkspaceEntry, type ExecConfig } from './registry';
import { createImagesRepository } from './repository';
import {
  DeleteImageBody,
  EmptyResponse,
  GetImagesBody,
  GetImagesGroupBody,
  GetUserImagesBody,
  GroupImageBody,
  ImageResponse,
  ImagesResponse,
  InstallWorkspaceBody,
  type Image,
} from './schemas';

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
    run_config: (row.run_config ?? null) as Record<string, unknown> | null,
    exec_config: (row.exec_config ?? null) as ExecConfig | null,
    notes: row.notes,
    cores: row.cores,
    memory: row.memory,
    gpu_count: row.gpu_count,
    enabled: row.enabled,
    created: toKasmDate(row.created),
  };
}

/** A string that names something: absent, null and blank strings do not. */
const named = (value: string | null | undefined): string | undefined =>
  typeof value === 'string' && value.trim() !== '' ? value : undefined;

const imagesRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const images = createImagesRepository(app.database.db);
  const imagesResponse = (description: string) => annotate(ImagesResponse, { description });

  {
    const op = operation(
      { permission: 'Images Create', writes: true },
      'images',
      'Install a workspace',
      'Installs the registry entry `workspace` (schema 1.0) as an image. Types are strict; every failure answers ' +
        '`Invalid workspace: <field> ...` naming the fields (e.g. `Invalid workspace: compatibility must be a list of versions like 1.13.x`); ' +
        'unknown fields are ignored and not stored; `null` counts as absent. No `workspace`: `Invalid Request: Missing required parameters`. ' +
        'The same `name` cannot be installed twice (`Image (<name>) already exists`, also when two installs race). ' +
        'Answers the image: the entry plus `image_id`, `enabled` and `created`; `memory` stays in MB. A documented extension.',
    );
    app.post(
      '/install_workspace',
      {
        config: op.config,
        schema: {
          ...op.schema,
          body: InstallWorkspaceBody,
          response: { 200: annotate(ImageResponse, { description: 'The installed image' }), ...op.errors },
        },
      },
      async (request) => {
        const workspace = request.body.workspace;
        if (workspace === undefined || workspace === null) throw new MissingParameters();
        const checked = checkWorkspaceEntry(workspace);
        if (!checked.ok) throw new InvalidWorkspace(checked.problems.join('; '));
        const row = await images.install(checked.value);
        if (!row) throw new ImageExists(checked.value.name);
        return { image: toImage(row) };
      },
    );
  }

  {
    const op = operation(
      { permission: 'Images View', writes: false },
      'images',
      'List images',
      'Every installed image, in installation order.',
    );
    app.post(
      '/get_images',
      {
        config: op.config,
        schema: {
          ...op.schema,
          body: GetImagesBody,
          response: { 200: imagesResponse('Every image'), ...op.errors },
        },
      },
      async () => ({ images: (await images.list()).map(toImage) }),
    );
  }

  {
    const op = operation(
      { permission: 'Images Delete', writes: true },
      'images',
      'Delete an image',
      'Deletes the image `target_image.image_id` and removes it from every group\u2019s allow-list; its name can then be installed ' +
        'again. No id: `Invalid Request: Missing required parameters`; a malformed or unknown id: `Invalid Image ID (<id>)`.',
    );
    app.post(
      '/delete_image',
      {
        config: op.config,
        schema: {
          ...op.schema,
          body: DeleteImageBody,
          response: { 200: EmptyResponse('The image is deleted'), ...op.errors },
        },
      },
      async (request) => {
        const raw = named(request.body.target_image?.image_id);
        if (raw === undefined) throw new MissingParameters();
        const id = parseId(raw);
        if (id === undefined || !(await images.delete(id))) throw new InvalidImageId(raw);
        return {};
      },
    );
  }

  /** The pair an allow-list change names: both ids required, both must exist. */
  function groupImagePair(body: {
    target_group?: { group_id?: string | null } | null;
    target_image?: { image_id?: string | null } | null;
  }) {
    const rawGroup = named(body.target_group?.group_id);
    const rawImage = named(body.target_image?.image_id);
    if (rawGroup === undefined || rawImage === undefined) throw new MissingGroupOrImage();
    const groupId = parseId(rawGroup);
    const imageId = parseId(rawImage);
    if (groupId === undefined || imageId === undefined) throw new GroupOrImageMissing();
    return { groupId, imageId };
  }

  {
    const op = operation(
      { permission: 'Groups Modify', writes: true },
      'images',
      'Allow a group to use an image',
      'Adds the image `target_image.image_id` to the allow-list of the group `target_group.group_id`. Adding a pair that is ' +
        'already allowed changes nothing and answers `{}` too. A missing id: `Invalid request, missing group or image id`; a ' +
        'malformed or unknown group or image: `Group or image does not exist`.',
    );
    app.post(
      '/add_images_group',
      {
        config: op.config,
        schema: {
          ...op.schema,
          body: GroupImageBody,
          response: { 200: EmptyResponse('The group may use the image'), ...op.errors },
        },
      },
      async (request) => {
        const { groupId, imageId } = groupImagePair(request.body);
        if ((await images.addToGroup(groupId, imageId)) !== 'done') throw new GroupOrImageMissing();
        return {};
      },
    );
  }

  {
    const op = operation(
      { permission: 'Groups Modify', writes: true },
      'images',
      'Stop a group from using an image',
      'Removes the image `target_image.image_id` from the allow-list of the group `target_group.group_id`. Removing a pair that ' +
        'is not allowed (group and image both existing) changes nothing and answers `{}` too. A missing id: ' +
        '`Invalid request, missing group or image id`; a malformed or unknown group or image: `Group or image does not exist`.',
    );
    app.post(
      '/remove_images_group',
      {
        config: op.config,
        schema: {
          ...op.schema,
          body: GroupImageBody,
          response: { 200: EmptyResponse('The group may no longer use the image'), ...op.errors },
        },
      },
      async (request) => {
        const { groupId, imageId } = groupImagePair(request.body);
        if ((await images.removeFromGroup(groupId, imageId)) !== 'done') throw new GroupOrImageMissing();
        return {};
      },
    );
  }

  {
    const op = operation(
      { permission: 'Groups View', writes: false },
      'images',
      'List a group\u2019s images',
      'The images the group `target_group.group_id` may use, in installation order. No id: `Invalid Request: Missing required ' +
        'parameters`; a malformed or unknown id: `Invalid Group ID (<id>)`.',
    );
    app.post(
      '/get_images_group',
      {
        config: op.config,
        schema: {
          ...op.schema,
          body: GetImagesGroupBody,
          response: { 200: imagesResponse('The group\u2019s allowed images'), ...op.errors },
        },
      },
      async (request) => {
        const raw = named(request.body.target_group?.group_id);
        if (raw === undefined) throw new MissingParameters();
        const id = parseId(raw);
        if (id === undefined || !(await images.groupExists(id))) throw new InvalidGroupId(raw);
        return { images: (await images.listForGroup(id)).map(toImage) };
      },
    );
  }

  {
    const op = operation(
      { permission: 'Users View', writes: false },
      'images',
      'List the images a user may use',
      'The union of the allow-lists of the groups of the user `target_user.user_id`, each image once, in installation order. ' +
        'No id: `Invalid Request: Missing required parameters`; a malformed or unknown id: `Unknown User`. A documented extension.',
    );
    app.post(
      '/get_user_images',
      {
        config: op.config,
        schema: {
          ...op.schema,
          body: GetUserImagesBody,
          response: { 200: imagesResponse('The user\u2019s images'), ...op.errors },
        },
      },
      async (request) => {
        const raw = named(request.body.target_user?.user_id);
        if (raw === undefined) throw new MissingParameters();
        const id = parseId(raw);
        if (id === undefined || !(await images.userExists(id))) throw new UnknownUser();
        return { images: (await images.listForUser(id)).map(toImage) };
      },
    );
  }
};

export default imagesRoutes;
