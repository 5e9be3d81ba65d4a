import { apiDiff } from 'api-smart-diff';
import type { OpenApiDocument } from './document';

/** One change of a document that can break a client written against the earlier one. */
export interface BreakingChange {
  /** Where, as a JSON path of the later document (the earlier one for a removal). */
  path: string;
  /** What changed, in words. */
  description: string;
}

/** The first number of `info.version` (`1.0` and `1.0.0` are major 1). */
export function majorOf(version: string): number | undefined {
  const match = /^v?(\d+)/.exec(version.trim());
  return match ? Number(match[1]) : undefined;
}

const pathText = (path: ReadonlyArray<string | number>) => path.map(String).join(' › ');

/**
 * api-smart-diff's own rules say a type changed in a response or a parameter is not breaking, and
 * nor is a response value that may now be null: both break a client that was typed from the earlier
 * document (it reads a string and gets a number, or `null`). Our rules on top of its rules.
 */
function stricterRule(diff: { action: string; path: ReadonlyArray<string | number>; after?: unknown }) {
  const [root, ...rest] = diff.path;
  if (root !== 'paths') return false;
  const key = rest[rest.length - 1];
  if (key === 'type' && diff.action === 'replace') return true;
  const inResponse = rest.includes('responses');
  return inResponse && key === 'nullable' && diff.action !== 'remove' && diff.after === true;
}

/**
 * `document` with every `$ref` to `#/components/schemas/…` replaced by the component itself (its
 * siblings kept), a reference inside its own component left as it is. api-smart-diff compares a
 * `$ref` it meets against an inline schema as an `allOf` it adds, so an inline schema moved into a
 * named component would read as every field removed; compared inlined, only real changes remain.
 */
export function inlineComponents(document: OpenApiDocument): OpenApiDocument {
  const components =
    (document as { components?: { schemas?: Record<string, unknown> } }).components?.schemas ?? {};
  const PREFIX = '#/components/schemas/';
  const inline = (node: unknown, within: ReadonlySet<string>): unknown => {
    if (Array.isArray(node)) return node.map((item) => inline(item, within));
    if (!node || typeof node !== 'object') return node;
    const { $ref, ...rest } = node as Record<string, unknown>;
    const siblings = Object.fromEntries(
      Object.entries(rest).map(([key, value]) => [key, inline(value, within)]),
    );
    if (typeof $ref !== 'string' || !$ref.startsWith(PREFIX))
      return $ref === undefined ? siblings : { $ref, ...siblings };
    const name = decodeURIComponent($ref.slice(PREFIX.length)).replace(/~1/g, '/').replace(/~0/g, '~');
    if (within.has(name) || !(name in components)) return { $ref, ...siblings };
    return { ...(inline(components[name], new Set([...within, name])) as object), ...siblings };
  };
  return { ...document, paths: inline(document.paths, new Set()) as OpenApiDocument['paths'] };
}

/**
 * The changes from `before` to `after` that break a client of `before`: an operation, a parameter, a
 * response status or a response field removed; a request field or parameter made required; a
 * request's accepted values narrowed (type, enum, bounds, length); a response field no longer
 * required; a type changed; a response value made nullable. Classified by api-smart-diff (its OpenAPI
 * 3.0 rules) over both documents with their components inlined (`inlineComponents`: a change of a
 * shared component is reported at each use, and naming an inline schema changes nothing), with the
 * two stricter rules above. Changes of components themselves are left out: what a client sees is the
 * operations, and each use of a component is compared there.
 */
export function breakingChanges(before: OpenApiDocument, after: OpenApiDocument): BreakingChange[] {
  return apiDiff(inlineComponents(before), inlineComponents(after))
    .filter((diff) => diff.path[0] === 'paths')
    .filter((diff) => diff.type === 'breaking' || stricterRule(diff))
    .map((diff) => ({
      path: pathText(diff.path),
      description: diff.description ?? `${diff.action} ${pathText(diff.path)}`,
    }));
}

export interface Verdict {
  breaking: BreakingChange[];
  /** The major version moved on (`info.version`): breaking changes are then announced, not refused. */
  majorChanged: boolean;
  /** Nothing breaks, or the major version says it does. */
  ok: boolean;
}

/** Whether `after` may replace `before`: no breaking change, unless `info.version`'s major changed. */
export function judge(before: OpenApiDocument, after: OpenApiDocument): Verdict {
  const breaking = breakingChanges(before, after);
  const majorChanged = majorOf(before.info.version) !== majorOf(after.info.version);
  return { breaking, majorChanged, ok: breaking.length === 0 || majorChanged };
}
