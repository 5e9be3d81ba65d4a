import type { DocsOptions } from './plugins/external/swagger';

/**
 * A service's OpenAPI tags (`DocsOptions['tags']`) from a table of tag name → description, in the
 * table's order: one line a tag where each service would otherwise write a `{ name, description }`
 * object a tag.
 */
export function openApiTags(table: Record<string, string>): DocsOptions['tags'] {
  return Object.entries(table).map(([name, description]) => ({ name, description }));
}
