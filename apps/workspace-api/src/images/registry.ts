/**
 * Kasm workspace registries, schema 1.0: one entry (`workspace.json`, what `install_workspace`
 * receives) and a whole catalogue (`list.json`, what `registry import` reads). Checked in code so
 * that every failure names its field in plain words (`compatibility must be a list of versions
 * like 1.13.x`); types are strict (no coercion), unknown fields are dropped, and a field that is
 * present and `null` counts as absent.
 */

export const ARCHITECTURES = ['amd64', 'arm64'] as const;
export type Architecture = (typeof ARCHITECTURES)[number];

/** The `exec_config` hooks the contract knows; each is `{cmd: string}` (other members are kept). */
export const EXEC_HOOKS = ['go', 'assign', 'first_launch'] as const;

/** The largest value of the database's `integer` columns. */
export const MAX_INTEGER = 2147483647;

/** `MAJOR.MINOR.x`, a Kasm release line. */
export const COMPATIBILITY_PATTERN = '^[0-9]+\\.[0-9]+\\.x$';
const COMPATIBILITY = new RegExp(COMPATIBILITY_PATTERN);

/*
 * An image reference `<repository>:<tag>` (Docker's grammar, without digests): the repository may
 * start with a registry host (and port) followed by `/`; its path components are lowercase; the tag
 * is required.
 */
const HOST_PART = '[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?';
const HOST = `${HOST_PART}(?:\\.${HOST_PART})*(?::[0-9]{1,5})?`;
const PATH_PART = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
const TAG = '[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}';
const IMAGE_REFERENCE = new RegExp(`^(?:${HOST}/)?${PATH_PART}(?:/${PATH_PART})*:${TAG}$`);
/** Docker's limit on the repository part of a reference. */
const MAX_REPOSITORY_LENGTH = 255;

export const NAME_RULE = 'must be an image reference <repository>:<tag>, e.g. kasmweb/desktop:1.16.0';

export type ExecConfig = Partial<
  Record<(typeof EXEC_HOOKS)[number], { cmd: string; [key: string]: unknown }>
> &
  Record<string, unknown>;

/** A valid registry entry, as stored: only the contract's fields, absent optional ones null. */
export interface WorkspaceEntry {
  friendly_name: string;
  name: string;
  description: string;
  image_src: string;
  architecture: Architecture[];
  compatibility: string[];
  uncompressed_size_mb: number;
  categories: string[];
  docker_registry: string | null;
  run_config: Record<string, unknown> | null;
  exec_config: ExecConfig | null;
  notes: string | null;
  cores: number | null;
  /** MB, as in the registry. */
  memory: number | null;
  gpu_count: number | null;
}

export type Checked<T> = { ok: true; value: T } | { ok: false; problems: string[] };

export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const isString = (value: unknown): value is string => typeof value === 'string';
const isNonEmptyString = (value: unknown): value is string =>
  typeof value === 'string' && value.trim() !== '';
const isStringList = (value: unknown): value is string[] => Array.isArray(value) && value.every(isString);
const isCount = (value: unknown): value is number =>
  typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_INTEGER;
const isAmount = (value: unknown): value is number =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0;

/** An absolute http(s) URL. */
export function isHttpUrl(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  try {
    const url = new URL(value);
    return (url.protocol === 'https:' || url.protocol === 'http:') && url.host !== '';
  } catch {
    return false;
  }
}

export function isImageReference(value: unknown): value is string {
  if (typeof value !== 'string' || !IMAGE_REFERENCE.test(value)) return false;
  return value.lastIndexOf(':') <= MAX_REPOSITORY_LENGTH;
}

const distinct = <T>(values: T[]) => [...new Set(values)];

/**
 * Collects one problem per failing field: `required(field, test, rule)` for required fields,
 * `optional(...)` for the others (absent or null: null).
 */
function fieldChecker(entry: Record<string, unknown>) {
  const problems: string[] = [];
  return {
    problems,
    required<T>(field: string, test: (v: unknown) => v is T, rule: string): T | undefined {
      const value = entry[field];
      if (value === undefined || value === null) problems.push(`${field} is required`);
      else if (test(value)) return value;
      else problems.push(`${field} ${rule}`);
      return undefined;
    },
    optional<T>(field: string, test: (v: unknown) => v is T, rule: string): T | null {
      const value = entry[field];
      if (value === undefined || value === null) return null;
      if (test(value)) return value;
      problems.push(`${field} ${rule}`);
      return null;
    },
  };
}

const isArchitectureList = (value: unknown): value is Architecture[] =>
  Array.isArray(value) &&
  value.length > 0 &&
  value.every((a) => (ARCHITECTURES as readonly unknown[]).includes(a));
const isCompatibilityList = (value: unknown): value is string[] =>
  Array.isArray(value) &&
  value.length > 0 &&
  value.every((v) => typeof v === 'string' && COMPATIBILITY.test(v));

/** `exec_config`'s own problems (each hook named, e.g. `exec_config.go.cmd must be a string`). */
function execConfigProblems(config: Record<string, unknown>): string[] {
  const problems: string[] = [];
  for (const hook of EXEC_HOOKS) {
    const value = config[hook];
    if (value === undefined || value === null) continue;
    if (!isPlainObject(value)) problems.push(`exec_config.${hook} must be an object like {"cmd": "..."}`);
    else if (typeof value.cmd !== 'string') problems.push(`exec_config.${hook}.cmd must be a string`);
  }
  return problems;
}

/** A schema-1.0 registry entry, or every problem found in it (each naming its field). */
export function checkWorkspaceEntry(value: unknown): Checked<WorkspaceEntry> {
  if (!isPlainObject(value)) return { ok: false, problems: ['workspace must be an object'] };
  const f = fieldChecker(value);
  const friendly_name = f.required('friendly_name', isNonEmptyString, 'must be a non-empty string');
  const name = f.required('name', isImageReference, NAME_RULE);
  const description = f.required('description', isString, 'must be a string');
  const image_src = f.required(
    'image_src',
    isNonEmptyString,
    'must be a non-empty string (the icon file name)',
  );
  const architecture = f.required(
    'architecture',
    isArchitectureList,
    `must be a non-empty list of ${ARCHITECTURES.join(', ')}`,
  );
  const compatibility = f.required(
    'compatibility',
    isCompatibilityList,
    'must be a list of versions like 1.13.x',
  );
  const uncompressed_size_mb = f.required(
    'uncompressed_size_mb',
    isCount,
    `must be an integer from 0 to ${MAX_INTEGER}`,
  );
  const categories = f.optional('categories', isStringList, 'must be a list of strings');
  const docker_registry = f.optional(
    'docker_registry',
    isHttpUrl,
    'must be an http(s) URL, e.g. https://index.docker.io/v1/',
  );
  const run_config = f.optional('run_config', isPlainObject, 'must be an object, e.g. {"hostname": "kasm"}');
  const exec_config = f.optional(
    'exec_config',
    isPlainObject,
    'must be an object with optional go, assign and first_launch, each {"cmd": "..."}',
  );
  if (exec_config) f.problems.push(...execConfigProblems(exec_config));
  const notes = f.optional('notes', isString, 'must be a string');
  const cores = f.optional('cores', isAmount, 'must be a number >= 0');
  const memory = f.optional('memory', isCount, `must be an integer (MB) from 0 to ${MAX_INTEGER}`);
  const gpu_count = f.optional('gpu_count', isCount, `must be an integer from 0 to ${MAX_INTEGER}`);
  if (f.problems.length) return { ok: false, problems: f.problems };
  return {
    ok: true,
    value: {
      friendly_name: friendly_name!,
      name: name!,
      description: description!,
      image_src: image_src!,
      architecture: distinct(architecture!),
      compatibility: distinct(compatibility!),
      uncompressed_size_mb: uncompressed_size_mb!,
      categories: categories ?? [],
      docker_registry,
      run_config,
      exec_config: exec_config as ExecConfig | null,
      notes,
      cores,
      memory,
      gpu_count,
    },
  };
}

/** A registry catalogue (`list.json`): the store's identity and its entries (not yet checked). */
export interface RegistryDocument {
  name: string;
  description: string;
  icon: string;
  list_url: string;
  workspaces: unknown[];
}

/**
 * The fields Kasm requires of a `list.json` (`name`, `description`, `icon`, `list_url`,
 * `workspaces`), with types; the entries themselves are checked one by one on import.
 */
export function checkRegistryDocument(value: unknown): Checked<RegistryDocument> {
  if (!isPlainObject(value)) return { ok: false, problems: ['the document must be a JSON object'] };
  const f = fieldChecker(value);
  const name = f.required('name', isNonEmptyString, 'must be a non-empty string');
  const description = f.required('description', isString, 'must be a string');
  const icon = f.required('icon', isString, 'must be a string');
  const list_url = f.required('list_url', isHttpUrl, 'must be an http(s) URL');
  const workspaces = f.required('workspaces', (v): v is unknown[] => Array.isArray(v), 'must be a list');
  if (f.problems.length) return { ok: false, problems: f.problems };
  return {
    ok: true,
    value: {
      name: name!,
      description: description!,
      icon: icon!,
      list_url: list_url!,
      workspaces: workspaces!,
    },
  };
}
