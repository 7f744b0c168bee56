// Label values for broker_http_requests_total: a closed set, so a scanner
// probing random paths cannot grow the number of series (and no handle,
// query or subject ever becomes a label).

const exact = new Set(['/', '/login', '/logout', '/auth/callback', '/connect/done', '/healthz', '/readyz', '/metrics']);
const prefixes = [
  ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource'],
  ['/static', '/static'],
  ['/ops', '/ops'],
] as const;
const methods = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** The route a request path belongs to: a known route template, or 'other'. `mcpPath` is the MCP endpoint's path. */
export function routeLabel(path: string, mcpPath = '/mcp'): string {
  if (path === mcpPath) return '/mcp';
  if (exact.has(path)) return path;
  // One opaque segment after /connect/ is a connect link (GET shows it, POST consents).
  if (path.startsWith('/connect/') && path.indexOf('/', '/connect/'.length) === -1 && path.length > '/connect/'.length)
    return '/connect/:handle';
  // One segment after /oauth/callback/ is a provider's callback (a provider id, from the configuration).
  if (
    path.startsWith('/oauth/callback/') &&
    path.indexOf('/', '/oauth/callback/'.length) === -1 &&
    path.length > '/oauth/callback/'.length
  )
    return '/oauth/callback/:provider';
  for (const [prefix, label] of prefixes) {
    if (path === prefix || path.startsWith(`${prefix}/`)) return label;
  }
  return 'other';
}

/** The request method, or 'other' for anything outside the standard set. */
export function methodLabel(method: string | undefined): string {
  return method !== undefined && methods.has(method) ? method : 'other';
}
