import type { Kysely } from 'kysely';
import { param, prepare, SQLSTATE, sqlState } from '@platform/db';
import type { ImageRow, NewImage, WorkspaceDatabase } from '../db/schema';
import { deleteWhere, insertMissing } from '../db/statements';
import type { InstalledEntry } from './registry';

const json = (value: unknown) => (value === null || value === undefined ? null : JSON.stringify(value));

function toNewImage(entry: InstalledEntry): NewImage {
  return { ...entry, run_config: json(entry.run_config), exec_config: json(entry.exec_config) };
}

export type GroupImageChange = 'done' | 'group-or-image-missing';

/** Every statement about images (installed workspaces) and group allow-lists. Ids are the database (dashed) form. */
export function createImagesRepository(db: Kysely<WorkspaceDatabase>) {
  /** Images in installation order (then by id), the order every listing uses. */
  const images = () =>
    db.selectFrom('images').selectAll('images').orderBy('images.created').orderBy('images.id');
  const allImages = prepare(db, images(), () => []);
  /** The union of the images the groups of user `$1` may use, each once. */
  const imagesOfUser = prepare(
    db,
    images().where('images.id', 'in', (eb) =>
      eb
        .selectFrom('group_images')
        .innerJoin('user_groups', 'user_groups.group_id', 'group_images.group_id')
        .select('group_images.image_id')
        .where('user_groups.user_id', '=', param<string>(1)),
    ),
    (userId: string) => [userId],
  );

  return {
    list: (): Promise<ImageRow[]> => allImages(),

    /**
     * Installs an entry; undefined when an image of that name exists (also when a concurrent install
     * of the same name won: the unique index decides, nothing is raised).
     */
    install(entry: InstalledEntry): Promise<ImageRow | undefined> {
      return db
        .insertInto('images')
        .values(toNewImage(entry))
        .onConflict((oc) => oc.column('name').doNothing())
        .returningAll()
        .executeTakeFirst();
    },

    /** Installs many entries (batched); answers the names actually installed (the others existed). */
    async installMany(entries: InstalledEntry[]): Promise<Set<string>> {
      return new Set(await insertMissing(db, 'images', entries.map(toNewImage), ['name'], 'name'));
    },

    /** Deletes an image; its group allow-list entries go with it (foreign key cascade). False when there was none. */
    async delete(id: string): Promise<boolean> {
      return deleteWhere(db, 'images', { id });
    },

    async groupExists(groupId: string): Promise<boolean> {
      return (
        (await db.selectFrom('groups').select('id').where('id', '=', groupId).executeTakeFirst()) !==
        undefined
      );
    },

    async userExists(userId: string): Promise<boolean> {
      return (
        (await db.selectFrom('users').select('id').where('id', '=', userId).executeTakeFirst()) !== undefined
      );
    },

    /** The images a group may use. */
    listForGroup(groupId: string): Promise<ImageRow[]> {
      return images()
        .innerJoin('group_images', 'group_images.image_id', 'images.id')
        .where('group_images.group_id', '=', groupId)
        .execute();
    },

    /** The union of the images the user's groups may use, each once, in one statement. */
    listForUser: (userId: string): Promise<ImageRow[]> => imagesOfUser(userId),

    /**
     * Allows a group to use an image, in one statement; allowing it again changes nothing. A missing
     * group or image (also one deleted concurrently) is told by the foreign keys.
     */
    async addToGroup(groupId: string, imageId: string): Promise<GroupImageChange> {
      try {
        await db
          .insertInto('group_images')
          .values({ group_id: groupId, image_id: imageId })
          .onConflict((oc) => oc.columns(['group_id', 'image_id']).doNothing())
          .execute();
        return 'done';
      } catch (error) {
        if (sqlState(error) === SQLSTATE.foreignKeyViolation) return 'group-or-image-missing';
        throw error;
      }
    },

    /** Allows many pairs (seeding), batched; pairs already allowed are left alone. */
    async addManyToGroups(pairs: { group_id: string; image_id: string }[]): Promise<number> {
      return (await insertMissing(db, 'group_images', pairs, ['group_id', 'image_id'], 'image_id')).length;
    },

    /**
     * Takes an image off a group's allow-list. A pair that was not allowed is no error as long as the
     * group and the image exist (removal is idempotent, like adding).
     */
    async removeFromGroup(groupId: string, imageId: string): Promise<GroupImageChange> {
      if (await deleteWhere(db, 'group_images', { group_id: groupId, image_id: imageId })) return 'done';
      const { group, image } = await db
        .selectNoFrom((eb) => [
          eb.exists(eb.selectFrom('groups').select('id').where('id', '=', groupId)).as('group'),
          eb.exists(eb.selectFrom('images').select('id').where('id', '=', imageId)).as('image'),
        ])
        .executeTakeFirstOrThrow();
      return group && image ? 'done' : 'group-or-image-missing';
    },
  };
}

export type ImagesRepository = ReturnType<typeof createImagesRepository>;
