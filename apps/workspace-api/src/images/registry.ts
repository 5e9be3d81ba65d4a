import {
  FormatRegistry,
  Type,
  type SchemaOptions,
  type Static,
  type TObject,
  type TSchema,
} from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { MAX_ID, Nullable, VALIDATION_MESSAGE, validationMessageOf, withMessage } from '@platform/schema';

/**
 * Kasm workspace registries, schema 1.0: one entry (`workspace.json`, what `install_workspace`
 * receives) and a whole catalogue (`list.json`, what `registry import` reads). One TypeBox schema
 * each gives the checks, the TypeScript types and (for entries) the installed `Image`'s fields.
 * Every field carries its rule in plain words (`withMessage`, as request bodies do), so every
 * failure names its field (`compatibility must be a list of versions like 1.13.x`); types are strict
 * (no coercion), unknown fields are dropped, and a field that is present and `null` counts as absent.
 */

const ARCHITECTURES = ['amd64', 'arm64'] as const;
type Architecture = (typeof ARCHITECTURES)[number];

/** `MAJOR.MINOR.x`, a Kasm release line. */
const COMPATIBILITY_PATTERN = '^[0-9]+\\.[0-9]+\\.x$';

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

function isImageReference(value: string): boolean {
  return IMAGE_REFERENCE.test(value) && value.lastIndexOf(':') <= MAX_REPOSITORY_LENGTH;
}

/** An absolute http(s) URL, as WHATWG URL parsing (what clients use) reads it. */
function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'https:' || url.protocol === 'http:') && url.host !== '';
  } catch {
    return false;
  }
}

// Both rules need code (URL parsing, a length limit), so they are formats; TypeBox's format registry
// is one per process, and these names are this module's.
FormatRegistry.Set('image-reference', isImageReference);
FormatRegistry.Set('http-url', isHttpUrl);

/** Not empty once trimmed (`\s` and `String#trim` agree on what white space is). */
const NOT_BLANK = '\\S';

const Text = (rule: string, options: SchemaOptions = {}) => withMessage(Type.String(options), rule);
/** A count stored in an `integer` column (whose largest value is also the largest id). */
const Count = (rule: string, options: SchemaOptions = {}) =>
  withMessage(Type.Integer({ minimum: 0, maximum: MAX_ID, ...options }), rule);
/** An optional field: absent and null are the same. */
const Optional = <T extends TSchema>(schema: T) => Type.Optional(Nullable(schema));

/**
 * An architecture name. TypeBox checks `pattern` but not `enum` (libs/schema's StringEnum is not
 * checkable by `Value`); `enum` is what the OpenAPI document shows.
 */
const Architecture = Type.Unsafe<Architecture>(
  Type.String({ enum: [...ARCHITECTURES], pattern: `^(?:${ARCHITECTURES.join('|')})$` }),
);

const Command = withMessage(
  Type.Object(
    { cmd: Text('must be a string') },
    { additionalProperties: true, description: 'A command run in the session container' },
  ),
  'must be an object like {"cmd": "..."}',
);

const NAME_RULE = 'must be an image reference <repository>:<tag>, e.g. kasmweb/desktop:1.16.0';

/** A schema-1.0 registry entry, in the contract's field order (the order problems are named in). */
export const WorkspaceEntry = Type.Object(
  {
    friendly_name: Text('must be a non-empty string', { pattern: NOT_BLANK, examples: ['Chrome'] }),
    name: Text(NAME_RULE, {
      format: 'image-reference',
      description: 'Image reference `<repository>:<tag>`; unique',
      examples: ['kasmweb/chrome:1.16.0'],
    }),
    description: Text('must be a string'),
    image_src: Text('must be a non-empty string (the icon file name)', {
      pattern: NOT_BLANK,
      description: 'Icon file name',
      examples: ['chrome.png'],
    }),
    architecture: withMessage(
      Type.Array(Architecture, { minItems: 1 }),
      `must be a non-empty list of ${ARCHITECTURES.join(', ')}`,
    ),
    compatibility: withMessage(
      Type.Array(Type.String({ pattern: COMPATIBILITY_PATTERN }), {
        minItems: 1,
        examples: [['1.15.x', '1.16.x']],
      }),
      'must be a list of versions like 1.13.x',
    ),
    uncompressed_size_mb: Count(`must be an integer from 0 to ${MAX_ID}`),
    categories: Optional(withMessage(Type.Array(Type.String()), 'must be a list of strings')),
    docker_registry: Optional(
      Text('must be an http(s) URL, e.g. https://index.docker.io/v1/', {
        format: 'http-url',
        examples: ['https://index.docker.io/v1/'],
      }),
    ),
    run_config: Optional(
      withMessage(
        Type.Record(Type.String(), Type.Unknown(), {
          description: 'Docker run overrides, e.g. `{"hostname": "kasm"}`',
        }),
        'must be an object, e.g. {"hostname": "kasm"}',
      ),
    ),
    exec_config: Optional(
      withMessage(
        Type.Object(
          { go: Optional(Command), assign: Optional(Command), first_launch: Optional(Command) },
          {
            additionalProperties: true,
            description: 'Commands run on session events; other members are kept as given',
          },
        ),
        'must be an object with optional go, assign and first_launch, each {"cmd": "..."}',
      ),
    ),
    notes: Optional(Text('must be a string')),
    cores: Optional(withMessage(Type.Number({ minimum: 0 }), 'must be a number >= 0')),
    memory: Optional(
      Count(`must be an integer (MB) from 0 to ${MAX_ID}`, {
        description: 'MB (Kasm\u2019s own `get_images` reports bytes)',
      }),
    ),
    gpu_count: Optional(Count(`must be an integer from 0 to ${MAX_ID}`)),
  },
  { description: 'A workspace registry entry (schema 1.0)' },
);
export type WorkspaceEntry = Static<typeof WorkspaceEntry>;

/** A copy of a schema without its rules: they word the checks of an entry, not what an image is. */
function withoutRules<T>(schema: T): T {
  if (Array.isArray(schema)) return schema.map(withoutRules) as T;
  if (typeof schema !== 'object' || schema === null) return schema;
  const copy: Record<PropertyKey, unknown> = {};
  // Own keys include TypeBox's symbols (`Kind`, `OptionalKind`), which its builders read.
  for (const key of Reflect.ownKeys(schema))
    if (key !== VALIDATION_MESSAGE) copy[key] = withoutRules((schema as Record<PropertyKey, unknown>)[key]);
  return copy as T;
}

/** An entry as installed: every field present, absent optional ones null, `categories` a list. */
export const InstalledEntry = withoutRules(
  Type.Object({
    ...Type.Required(WorkspaceEntry).properties,
    categories: Type.Array(Type.String(), { description: 'Empty when the entry has none' }),
  }),
);
export type InstalledEntry = Static<typeof InstalledEntry>;

/** A registry catalogue (`list.json`): the store's identity and its entries (checked one by one on import). */
export const RegistryDocument = Type.Object({
  name: Text('must be a non-empty string', { pattern: NOT_BLANK }),
  description: Text('must be a string'),
  icon: Text('must be a string'),
  list_url: Text('must be an http(s) URL', { format: 'http-url' }),
  workspaces: withMessage(Type.Array(Type.Unknown()), 'must be a list'),
});
export type RegistryDocument = Static<typeof RegistryDocument>;

export type Checked<T> = { ok: true; value: T } | { ok: false; problems: string[] };

export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Where an error of `Value.Errors` belongs and what it says: the deepest schema on its path that
 * has a rule names the field (`exec_config.go.cmd`) and gives the rule; a required field of the
 * document that is absent or null is `required` instead.
 */
function problemAt(schema: TObject, path: string, document: Record<string, unknown>): [string, string] {
  const segments = path.split('/').slice(1);
  let node: TSchema | undefined = schema;
  let field = segments[0];
  let rule: string | undefined;
  segments.forEach((segment, depth) => {
    // Object members by name, array items by index; the checked documents have no other nesting.
    node = node?.properties?.[segment] ?? node?.items;
    const message = validationMessageOf(node);
    if (message !== undefined) {
      field = segments.slice(0, depth + 1).join('.');
      rule = message;
    }
  });
  if (!field.includes('.') && (document[field] === undefined || document[field] === null))
    return [field, 'is required'];
  return [field, rule ?? 'is invalid'];
}

/** How deep the free-form JSON of `run_config` and `exec_config` may nest (the field itself is level 1). */
export const MAX_CONFIG_DEPTH = 16;

/**
 * The rule free-form JSON (stored as `jsonb`) breaks, if any: the schema cannot see inside it, and
 * PostgreSQL refuses NUL characters and lone surrogates, JSON.parse reads `1e309` as Infinity (which
 * would be stored as null) and unbounded nesting would overflow the stack when serialised. The walk
 * stops at the depth bound, so it is itself bounded.
 */
function freeFormRule(value: unknown, depth = 1): string | undefined {
  if (typeof value === 'string') return textRule(value);
  if (typeof value === 'number')
    return Number.isFinite(value) ? undefined : 'must contain only finite numbers';
  if (typeof value !== 'object' || value === null) return undefined;
  if (depth > MAX_CONFIG_DEPTH) return `must be JSON nested at most ${MAX_CONFIG_DEPTH} levels deep`;
  for (const [key, child] of Object.entries(value)) {
    const rule = textRule(key) ?? freeFormRule(child, depth + 1);
    if (rule) return rule;
  }
  return undefined;
}

/** A surrogate that is not half of a pair (with the `u` flag, a pair reads as one code point). */
const LONE_SURROGATE = /\p{Surrogate}/u;

function textRule(text: string): string | undefined {
  if (text.includes('\u0000')) return 'must not contain NUL characters';
  if (LONE_SURROGATE.test(text)) return 'must not contain lone surrogates (invalid Unicode)';
  return undefined;
}

/** The fields of an entry whose content the schema leaves free. */
const FREE_FORM_FIELDS = ['run_config', 'exec_config'] as const;

/**
 * `value` checked against `schema`, then its `freeForm` fields (once their type is right) against
 * `freeFormRule`: its known fields, or one problem per failing field, in the schema's order. */
function check<T extends TObject>(
  schema: T,
  value: unknown,
  notAnObject: string,
  freeForm: readonly string[] = [],
): Checked<Static<T>> {
  if (!isPlainObject(value)) return { ok: false, problems: [notAnObject] };
  const fields = Object.keys(schema.properties);
  const known = Object.fromEntries(
    fields.filter((field) => Object.hasOwn(value, field)).map((field) => [field, value[field]]),
  );
  const problems = new Map<string, string>();
  for (const error of Value.Errors(schema, known)) {
    // TypeBox does not read OpenAPI's `nullable` (libs/schema's Nullable): null is allowed there.
    if (error.value === null && error.schema.nullable === true) continue;
    const [field, rule] = problemAt(schema, error.path, known);
    if (!problems.has(field)) problems.set(field, `${field} ${rule}`);
  }
  for (const field of freeForm) {
    const rule = problems.has(field) ? undefined : freeFormRule(known[field]);
    if (rule) problems.set(field, `${field} ${rule}`);
  }
  if (!problems.size) return { ok: true, value: known as Static<T> };
  // Value.Errors names missing required fields first; problems are told in the schema's order.
  const order = (field: string) => fields.indexOf(field.split('.')[0]);
  return {
    ok: false,
    problems: [...problems].sort(([a], [b]) => order(a) - order(b)).map(([, problem]) => problem),
  };
}

/** Every field null: under a checked entry's own fields, what remains are the optional ones it lacks. */
const ABSENT = Object.fromEntries(Object.keys(InstalledEntry.properties).map((field) => [field, null]));

const distinct = <T>(values: T[]) => [...new Set(values)];

/** A schema-1.0 registry entry as installed, or every problem found in it (each naming its field). */
export function checkWorkspaceEntry(value: unknown): Checked<InstalledEntry> {
  const checked = check(WorkspaceEntry, value, 'workspace must be an object', FREE_FORM_FIELDS);
  if (!checked.ok) return checked;
  const entry = checked.value;
  return {
    ok: true,
    value: {
      ...ABSENT,
      ...entry,
      architecture: distinct(entry.architecture),
      compatibility: distinct(entry.compatibility),
      categories: entry.categories ?? [],
    } as InstalledEntry,
  };
}

/** The fields Kasm requires of a `list.json`, with types; the entries are checked one by one on import. */
export function checkRegistryDocument(value: unknown): Checked<RegistryDocument> {
  return check(RegistryDocument, value, 'the document must be a JSON object');
}
