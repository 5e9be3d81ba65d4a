import type { Kysely } from 'kysely';
import type { WorkspaceDatabase } from '../db/schema';
import {
  GroupOrImageMissing,
  ImageExists,
  InvalidGroupId,
  InvalidImageId,
  InvalidWorkspace,
  UnknownUser,
} from '../errors';
import { lookup } from '../wire/fields';
import { parseId } from '../wire/kasm';
import { checkWorkspaceEntry, isPlainObject, type InstalledEntry } from './registry';
import { createImagesRepository, type GroupImageChange } from './repository';
import type { Image } from './schemas';
import { toImage } from './serialize';

export type ImportOutcome =
  | { status: 'installed'; name: string }
  | { status: 'skipped'; name: string }
  | { status: 'rejected'; label: string; reason: string };

/** Installed workspaces and the groups allowed to use them. Ids are as clients send them. */
export function createImagesService(db: Kysely<WorkspaceDatabase>) {
  const images = createImagesRepository(db);

  /** Changes the allow-list pair a client names; a malformed or unknown group or image is one error. */
  async function changeAllowList(
    rawGroup: string,
    rawImage: string,
    change: (groupId: string, imageId: string) => Promise<GroupImageChange>,
  ): Promise<void> {
    const groupId = parseId(rawGroup);
    const imageId = parseId(rawImage);
    if (groupId === undefined || imageId === undefined) throw new GroupOrImageMissing();
    if ((await change(groupId, imageId)) !== 'done') throw new GroupOrImageMissing();
  }

  return {
    /** Installs a registry entry (checked here, every problem named); a name installs once. */
    async install(workspace: unknown): Promise<Image> {
      const checked = checkWorkspaceEntry(workspace);
      if (!checked.ok) throw new InvalidWorkspace(checked.problems.join('; '));
      const row = await images.install(checked.value);
      if (!row) throw new ImageExists(checked.value.name);
      return toImage(row);
    },

    /**
     * Installs every valid entry of a registry that is not installed yet (in one statement per 500
     * entries), in the document's order: a name that exists, or that an earlier entry of the same
     * document installs, is skipped.
     */
    async importWorkspaces(workspaces: unknown[]): Promise<ImportOutcome[]> {
      const checked = workspaces.map((w, i) => {
        const result = checkWorkspaceEntry(w);
        const friendly =
          isPlainObject(w) && typeof w.friendly_name === 'string' && w.friendly_name.trim()
            ? w.friendly_name
            : `workspaces[${i}]`;
        return { result, label: friendly };
      });
      const valid = checked.flatMap(({ result }) => (result.ok ? [result.value] : ([] as InstalledEntry[])));
      const installed = await images.installMany(valid);
      return checked.map(({ result, label }): ImportOutcome => {
        if (!result.ok) return { status: 'rejected', label, reason: result.problems.join('; ') };
        const { name } = result.value;
        // The first entry of a name gets the installation; any later one in the document is a skip.
        if (installed.delete(name)) return { status: 'installed', name };
        return { status: 'skipped', name };
      });
    },

    async list(): Promise<Image[]> {
      return (await images.list()).map(toImage);
    },

    async delete(rawImage: string): Promise<void> {
      await lookup(
        rawImage,
        (id) => images.delete(id),
        () => new InvalidImageId(rawImage),
      );
    },

    allowGroup(rawGroup: string, rawImage: string): Promise<void> {
      return changeAllowList(rawGroup, rawImage, images.addToGroup);
    },

    disallowGroup(rawGroup: string, rawImage: string): Promise<void> {
      return changeAllowList(rawGroup, rawImage, images.removeFromGroup);
    },

    async listForGroup(rawGroup: string): Promise<Image[]> {
      const groupId = await lookup(
        rawGroup,
        async (id) => (await images.groupExists(id)) && id,
        () => new InvalidGroupId(rawGroup),
      );
      return (await images.listForGroup(groupId)).map(toImage);
    },

    async listForUser(rawUser: string): Promise<Image[]> {
      const userId = await lookup(
        rawUser,
        async (id) => (await images.userExists(id)) && id,
        () => new UnknownUser(),
      );
      return (await images.listForUser(userId)).map(toImage);
    },
  };
}

export type ImagesService = ReturnType<typeof createImagesService>;
