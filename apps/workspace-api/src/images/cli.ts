import { readFile } from 'node:fs/promises';
import type { Kysely } from 'kysely';
import type { WorkspaceDatabase } from '../db/schema';
import {
  checkRegistryDocument,
  checkWorkspaceEntry,
  isPlainObject,
  type RegistryDocument,
  type WorkspaceEntry,
} from './registry';
import { createImagesRepository } from './repository';

export const REGISTRY_USAGE = `  registry import LIST_JSON     install every valid workspace of a registry list.json (schema 1.0)`;

/** Reads and checks a registry `list.json`; throws a message naming the file and what is wrong with it. */
export async function readRegistryDocument(path: string): Promise<RegistryDocument> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new Error(`cannot read ${path}: ${(error as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new Error(`${path} is not valid JSON: ${(error as Error).message}`);
  }
  const checked = checkRegistryDocument(parsed);
  if (!checked.ok)
    throw new Error(
      `${path} is not a registry document (schema 1.0 list.json): ${checked.problems.join('; ')}`,
    );
  return checked.value;
}

export type ImportOutcome =
  | { status: 'installed'; name: string }
  | { status: 'skipped'; name: string }
  | { status: 'rejected'; label: string; reason: string };

/**
 * Installs every valid entry of a registry that is not installed yet (in one statement per 500
 * entries), in the document's order: a name that exists, or that an earlier entry of the same
 * document installs, is skipped.
 */
export async function importWorkspaces(
  db: Kysely<WorkspaceDatabase>,
  workspaces: unknown[],
): Promise<ImportOutcome[]> {
  const checked = workspaces.map((w, i) => {
    const result = checkWorkspaceEntry(w);
    const friendly =
      isPlainObject(w) && typeof w.friendly_name === 'string' && w.friendly_name.trim()
        ? w.friendly_name
        : `workspaces[${i}]`;
    return { result, label: friendly };
  });
  const valid = checked.flatMap(({ result }) => (result.ok ? [result.value] : ([] as WorkspaceEntry[])));
  const installed = await createImagesRepository(db).installMany(valid);
  return checked.map(({ result, label }): ImportOutcome => {
    if (!result.ok) return { status: 'rejected', label, reason: result.problems.join('; ') };
    const { name } = result.value;
    // The first entry of a name gets the installation; any later one in the document is a skip.
    if (installed.delete(name)) return { status: 'installed', name };
    return { status: 'skipped', name };
  });
}

/** `registry import <list.json>`: prints one line per entry and a summary, returns the exit code. */
export async function registryCommand(
  db: Kysely<WorkspaceDatabase>,
  sub: string | undefined,
  positionals: string[],
  out: (line: string) => void,
): Promise<number> {
  if (sub !== 'import' || positionals.length !== 1) throw new Error(`usage:\n${REGISTRY_USAGE}`);
  const [path] = positionals;
  const registry = await readRegistryDocument(path);
  const outcomes = await importWorkspaces(db, registry.workspaces);
  const counts = { installed: 0, skipped: 0, rejected: 0 };
  for (const o of outcomes) {
    counts[o.status]++;
    if (o.status === 'installed') out(`installed ${o.name}`);
    else if (o.status === 'skipped') out(`skipped ${o.name}: already installed`);
    else out(`rejected ${o.label}: ${o.reason}`);
  }
  out(
    `${registry.name}: ${outcomes.length} workspace${outcomes.length === 1 ? '' : 's'}, ` +
      `${counts.installed} installed, ${counts.skipped} skipped, ${counts.rejected} rejected`,
  );
  return 0;
}
