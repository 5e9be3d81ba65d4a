import { annotate } from '@platform/schema';
import { reads, writes } from '../auth/permissions';
import { MissingGroupOrImage } from '../errors';
import { required, requiredNamed } from '../wire/fields';
import { answerEmpty, EmptyResponse, operationsOf } from '../wire/operation';
import {
  DeleteImageBody,
  GetImagesBody,
  GetImagesGroupBody,
  GetUserImagesBody,
  GroupImageBody,
  type Image,
  ImageResponse,
  ImagesResponse,
  InstallWorkspaceBody,
} from './schemas';
import { createImagesService } from './service';

const imagesResponse = (description: string) => annotate(ImagesResponse, { description });

/** The answer of a listing: `{images}`. */
const listing = async (images: Promise<Image[]>) => ({ images: await images });

/** The pair an allow-list change names: both ids are required. */
const groupImagePair = (body: GroupImageBody) =>
  [
    requiredNamed(body.target_group?.group_id, MissingGroupOrImage),
    requiredNamed(body.target_image?.image_id, MissingGroupOrImage),
  ] as const;

/** The images operations, answered by the images service. */
const operations = operationsOf('images', (app) => createImagesService(app.database.db));

operations.add({
  name: 'install_workspace',
  access: writes('Images Create'),
  summary: 'Install a workspace',
  description:
    'Installs the registry entry `workspace` (schema 1.0) as an image. Types are strict; every failure answers ' +
    '`Invalid workspace: <field> ...` naming the fields (e.g. `Invalid workspace: compatibility must be a list of versions like 1.13.x`); ' +
    'unknown fields are ignored and not stored; `null` counts as absent. No `workspace`: `Invalid Request: Missing required parameters`. ' +
    'The same `name` cannot be installed twice (`Image (<name>) already exists`, also when two installs race). ' +
    'Answers the image: the entry plus `image_id`, `enabled` and `created`; `memory` stays in MB. A documented extension.',
  body: InstallWorkspaceBody,
  response: annotate(ImageResponse, { description: 'The installed image' }),
  answer: async (body, images) => ({ image: await images.install(required(body.workspace)) }),
});

operations.add({
  name: 'get_images',
  access: reads('Images View'),
  summary: 'List images',
  description: 'Every installed image, in installation order.',
  body: GetImagesBody,
  response: imagesResponse('Every image'),
  answer: (_body, images) => listing(images.list()),
});

operations.add({
  name: 'delete_image',
  access: writes('Images Delete'),
  summary: 'Delete an image',
  description:
    'Deletes the image `target_image.image_id` and removes it from every group\u2019s allow-list; its name can then be installed ' +
    'again. No id: `Invalid Request: Missing required parameters`; a malformed or unknown id: `Invalid Image ID (<id>)`.',
  body: DeleteImageBody,
  response: EmptyResponse('The image is deleted'),
  answer: answerEmpty((body, images) => images.delete(requiredNamed(body.target_image?.image_id))),
});

operations.add({
  name: 'add_images_group',
  access: writes('Groups Modify'),
  summary: 'Allow a group to use an image',
  description:
    'Adds the image `target_image.image_id` to the allow-list of the group `target_group.group_id`. Adding a pair that is ' +
    'already allowed changes nothing and answers `{}` too. A missing id: `Invalid request, missing group or image id`; a ' +
    'malformed or unknown group or image: `Group or image does not exist`.',
  body: GroupImageBody,
  response: EmptyResponse('The group may use the image'),
  answer: answerEmpty((body, images) => images.allowGroup(...groupImagePair(body))),
});

operations.add({
  name: 'remove_images_group',
  access: writes('Groups Modify'),
  summary: 'Stop a group from using an image',
  description:
    'Removes the image `target_image.image_id` from the allow-list of the group `target_group.group_id`. Removing a pair that ' +
    'is not allowed (group and image both existing) changes nothing and answers `{}` too. A missing id: ' +
    '`Invalid request, missing group or image id`; a malformed or unknown group or image: `Group or image does not exist`.',
  body: GroupImageBody,
  response: EmptyResponse('The group may no longer use the image'),
  answer: answerEmpty((body, images) => images.disallowGroup(...groupImagePair(body))),
});

operations.add({
  name: 'get_images_group',
  access: reads('Groups View'),
  summary: 'List a group\u2019s images',
  description:
    'The images the group `target_group.group_id` may use, in installation order. No id: `Invalid Request: Missing required ' +
    'parameters`; a malformed or unknown id: `Invalid Group ID (<id>)`.',
  body: GetImagesGroupBody,
  response: imagesResponse('The group\u2019s allowed images'),
  answer: (body, images) => listing(images.listForGroup(requiredNamed(body.target_group?.group_id))),
});

operations.add({
  name: 'get_user_images',
  access: reads('Users View'),
  summary: 'List the images a user may use',
  description:
    'The union of the allow-lists of the groups of the user `target_user.user_id`, each image once, in installation order. ' +
    'No id: `Invalid Request: Missing required parameters`; a malformed or unknown id: `Unknown User`. A documented extension.',
  body: GetUserImagesBody,
  response: imagesResponse('The user\u2019s images'),
  answer: (body, images) => listing(images.listForUser(requiredNamed(body.target_user?.user_id))),
});

export default operations.plugin;
