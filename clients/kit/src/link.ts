/**
 * The links of an RFC 8288 `Link` header by relation (`next`, `prev`…): the first target of each,
 * resolved against `base` (the response's URL) when it is relative.
 */
export function parseLinkHeader(
  header: string | null | undefined,
  base?: string | URL,
): Record<string, string> {
  const links: Record<string, string> = {};
  if (!header) return links;
  // `<target>; param=value; rel="next rel2", <target2>; ...`: commas inside <> are part of the target.
  const pattern = /<([^>]*)>((?:\s*;\s*(?:[^;,"]|"[^"]*")*)*)/g;
  for (const [, target, params] of header.matchAll(pattern)) {
    const rel = /;\s*rel\s*=\s*(?:"([^"]*)"|([^\s;,]+))/i.exec(params);
    const href = base ? new URL(target, base).toString() : target;
    for (const name of (rel?.[1] ?? rel?.[2] ?? '').toLowerCase().split(/\s+/).filter(Boolean))
      links[name] ??= href;
  }
  return links;
}
