import { readFile } from 'node:fs/promises';
import type { Kysely } from 'kysely';
import type { WorkspaceDatabase } from '../db/schema';
import { checkRegistryDocument, type RegistryDocument } from './registry';
import { createImagesService } from './service';

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
  const outcomes = await createImagesService(db).importWorkspaces(registry.workspaces);
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
