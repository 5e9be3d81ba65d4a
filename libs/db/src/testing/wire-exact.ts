/** The parts of a JSON schema (a TypeBox schema included) the wire-exact walk reads. */
export interface WireSchema {
  type?: string | string[];
  nullable?: boolean;
  properties?: Record<string, WireSchema>;
  items?: WireSchema;
  anyOf?: WireSchema[];
  oneOf?: WireSchema[];
  /** Any other keyword, which the walk does not read. */
  [keyword: string]: unknown;
}

/**
 * Where a body answered past the response-schema serialiser (http-kit's `nativeJson`) differs from
 * what that serialiser would write, or nothing: `value` (the parsed body) must hold exactly the
 * schema's properties, in the schema's order, at every depth; with `text` (the body as sent), that
 * text must also be `JSON.stringify`'s own writing of it (its escaping, no other spacing). The
 * schema's serialiser is not there to drop a property a mapping lets through (a password hash, an
 * internal counter) or to reorder one, so each service's test of such routes walks their bodies here.
 */
export function wireMismatches(value: unknown, schema: WireSchema, text?: string): string[] {
  const found = walk(value, schema, '$');
  if (text !== undefined && JSON.stringify(value) !== text)
    found.push('$: the text is not JSON.stringify of its value (escaping or spacing differs)');
  return found;
}

function walk(value: unknown, schema: WireSchema, path: string): string[] {
  if (value === null && (schema.nullable || schema.type === 'null')) return [];
  const branches = schema.anyOf ?? schema.oneOf;
  if (branches) {
    const tried = branches.map((branch) => walk(value, branch, path));
    return tried.some((problems) => problems.length === 0) ? [] : tried.flat();
  }
  if (schema.type === 'array') {
    if (!Array.isArray(value)) return [`${path}: not an array`];
    return value.flatMap((item, i) => walk(item, schema.items ?? {}, `${path}[${i}]`));
  }
  if (schema.type === 'object') {
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      return [`${path}: not an object`];
    const keys = Object.keys(value);
    const expected = Object.keys(schema.properties ?? {});
    if (keys.join() !== expected.join())
      return [`${path}: properties ${keys.join()} (schema: ${expected.join()})`];
    return keys.flatMap((key) =>
      walk((value as Record<string, unknown>)[key], schema.properties![key], `${path}.${key}`),
    );
  }
  return [];
}
