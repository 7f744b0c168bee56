// An MCP server's canonical URI (the MCP authorization spec, "Canonical Server URI"; RFC 8707 §2):
// lower-case scheme and host (the URL parser's), no fragment, and no trailing slash when the path
// is only "/". The resource indicator the broker sends, and what RFC 9728 §3.3 compares.

/** The canonical form of an absolute URL without a fragment; undefined for anything else. */
export function canonicalResource(raw: string): string | undefined {
  const url = URL.parse(raw);
  if (!url || url.hash !== '' || raw.includes('#')) return undefined;
  return url.pathname === '/' && url.search === '' ? url.href.slice(0, -1) : url.href;
}

/** Whether two resource identifiers name the same resource once both are canonical. */
export function sameResource(a: string, b: string): boolean {
  const left = canonicalResource(a);
  return left !== undefined && left === canonicalResource(b);
}
