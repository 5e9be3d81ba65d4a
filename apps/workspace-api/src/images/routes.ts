import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { annotate } from '@platform/schema';
import { MissingGroupOrImage } from '../errors';
import { named, required } from '../kasm/fields';
import { EmptyResponse, operationsOf } from '../kasm/operation';
import {
  DeleteImageBody,
  GetImagesBody,
  GetImagesGroupBody,
  GetUserImagesBody,
  GroupImageBody,
  ImageResponse,
  ImagesResponse,
  InstallWorkspaceBody,
} from './schemas';
import { createImagesService } from './service';

const operation = operationsOf('images');
const imagesResponse = (description: string) => annotate(ImagesResponse, { description });

const imagesRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const images = createImagesService(app.database.db);

  /** The pair an allow-list change names: both ids are required. */
  const groupImagePair = (body: GroupImageBody) => ({
    group: required(named(body.target_group?.group_id), MissingGroupOrImage),
    image: required(named(body.target_image?.image_id), MissingGroupOrImage),
  });

  app.post(
    '/install_workspace',
    operation({
      access: { permission: 'Images Create', writes: true },
      summary: 'Install a workspace',
      description:
        'Installs the registry entry `workspace` (schema 1.0) as an image. Types are strict; every failure answers ' +
        '`Invalid workspace: <field> ...` naming the fields (e.g. `Invalid workspace: compatibility must be a list of versions like 1.13.x`); ' +
        'unknown fields are ignored and not stored; `null` counts as absent. No `workspace`: `Invalid Request: Missing required parameters`. ' +
        'The same `name` cannot be installed twice (`Image (<name>) already exists`, also when two installs race). ' +
        'Answers the image: the entry plus `image_id`, `enabled` and `created`; `memory` stays in MB. A documented extension.',
      body: InstallWorkspaceBody,
      response: annotate(ImageResponse, { description: 'The installed image' }),
    }),
    async (request) => ({ image: await images.install(required(request.body.workspace)) }),
  );

  app.post(
    '/get_images',
    operation({
      access: { permission: 'Images View', writes: false },
      summary: 'List images',
      description: 'Every installed image, in installation order.',
      body: GetImagesBody,
      response: imagesResponse('Every image'),
    }),
    async () => ({ images: await images.list() }),
  );

  app.post(
    '/delete_image',
    operation({
      access: { permission: 'Images Delete', writes: true },
      summary: 'Delete an image',
      description:
        'Deletes the image `target_image.image_id` and removes it from every group\u2019s allow-list; its name can then be installed ' +
        'again. No id: `Invalid Request: Missing required parameters`; a malformed or unknown id: `Invalid Image ID (<id>)`.',
      body: DeleteImageBody,
      response: EmptyResponse('The image is deleted'),
    }),
    async (request) => {
      await images.delete(required(named(request.body.target_image?.image_id)));
      return {};
    },
  );

  app.post(
    '/add_images_group',
    operation({
      access: { permission: 'Groups Modify', writes: true },
      summary: 'Allow a group to use an image',
      description:
        'Adds the image `target_image.image_id` to the allow-list of the group `target_group.group_id`. Adding a pair that is ' +
        'already allowed changes nothing and answers `{}` too. A missing id: `Invalid request, missing group or image id`; a ' +
        'malformed or unknown group or image: `Group or image does not exist`.',
      body: GroupImageBody,
      response: EmptyResponse('The group may use the image'),
    }),
    async (request) => {
      const { group, image } = groupImagePair(request.body);
      await images.allowGroup(group, image);
      return {};
    },
  );

  app.post(
    '/remove_images_group',
    operation({
      access: { permission: 'Groups Modify', writes: true },
      summary: 'Stop a group from using an image',
      description:
        'Removes the image `target_image.image_id` from the allow-list of the group `target_group.group_id`. Removing a pair that ' +
        'is not allowed (group and image both existing) changes nothing and answers `{}` too. A missing id: ' +
        '`Invalid request, missing group or image id`; a malformed or unknown group or image: `Group or image does not exist`.',
      body: GroupImageBody,
      response: EmptyResponse('The group may no longer use the image'),
    }),
    async (request) => {
      const { group, image } = groupImagePair(request.body);
      await images.disallowGroup(group, image);
      return {};
    },
  );

  app.post(
    '/get_images_group',
    operation({
      access: { permission: 'Groups View', writes: false },
      summary: 'List a group\u2019s images',
      description:
        'The images the group `target_group.group_id` may use, in installation order. No id: `Invalid Request: Missing required ' +
        'parameters`; a malformed or unknown id: `Invalid Group ID (<id>)`.',
      body: GetImagesGroupBody,
      response: imagesResponse('The group\u2019s allowed images'),
    }),
    async (request) => ({
      images: await images.listForGroup(required(named(request.body.target_group?.group_id))),
    }),
  );

  app.post(
    '/get_user_images',
    operation({
      access: { permission: 'Users View', writes: false },
      summary: 'List the images a user may use',
      description:
        'The union of the allow-lists of the groups of the user `target_user.user_id`, each image once, in installation order. ' +
        'No id: `Invalid Request: Missing required parameters`; a malformed or unknown id: `Unknown User`. A documented extension.',
      body: GetUserImagesBody,
      response: imagesResponse('The user\u2019s images'),
    }),
    async (request) => ({
      images: await images.listForUser(required(named(request.body.target_user?.user_id))),
    }),
  );
};

export default imagesRoutes;
