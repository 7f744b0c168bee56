import { decodeJwt, errors as joseErrors } from 'jose';
import { sameResource } from '../shared/resource.js';

// An upstream is a server the broker does not control. Two of its answers would make the broker
// a confused deputy against itself: an authorization server that is the broker's own identity
// provider (with one that ignores RFC 8707's `resource`, a token it issues is valid on the
// broker's /mcp, and the broker would hand it to the upstream), and a resource on the broker's own
// origin (the broker would call itself with a user's token). The MCP authorization spec ("Token
// Audience Binding and Validation", "Access Token Privilege Restriction") asks the same of clients.

/** What no upstream may be: the broker's own public origin and its identity provider. */
export interface BrokerSelf {
  /** PUBLIC_URL: its /mcp and everything else the broker serves lives under it. */
  publicUrl: URL;
  /** The broker's OIDC issuer; undefined where it is not known yet (the development one before it starts). */
  issuer: string | undefined;
}

/** Why `url` is the broker's own (its origin, under PUBLIC_URL's path); undefined when it is not. */
export function ownUrlProblem(url: string, self: BrokerSelf): string | undefined {
  const parsed = URL.parse(url);
  if (!parsed || parsed.origin !== self.publicUrl.origin) return undefined;
  const base = self.publicUrl.pathname.replace(/\/$/, '');
  if (base !== '' && parsed.pathname !== base && !parsed.pathname.startsWith(`${base}/`)) return undefined;
  return `${url} is the broker's own address (PUBLIC_URL ${self.publicUrl.origin}${base}): an upstream is another server`;
}

/** Why `issuer` may not authorize an upstream; undefined when it may. */
export function ownIssuerProblem(issuer: string, self: BrokerSelf): string | undefined {
  if (self.issuer !== undefined && sameResource(issuer, self.issuer))
    return `${issuer} is the broker's own identity provider (OIDC_ISSUER): a token it issues could be valid on the broker itself, so none is sent to an upstream`;
  const own = ownUrlProblem(issuer, self);
  return own === undefined ? undefined : `the authorization server ${own}`;
}

/**
 * Why an upstream's access token is not for `resource` (RFC 9068 §4, RFC 8707 §2); undefined when it
 * is, or when the token is not a readable JWT (opaque, or encrypted for the server): only the
 * server can judge those. The token came over TLS from the pinned token endpoint, so its claims are
 * read without its signature: this refuses, it never grants.
 */
export function tokenAudienceProblem(accessToken: string, resource: string): string | undefined {
  let claims: ReturnType<typeof decodeJwt>;
  try {
    claims = decodeJwt(accessToken);
  } catch (err) {
    if (err instanceof joseErrors.JOSEError || err instanceof TypeError) return undefined;
    throw err;
  }
  const aud = claims.aud;
  const audiences = typeof aud === 'string' ? [aud] : Array.isArray(aud) ? aud : [];
  if (audiences.some((a) => typeof a === 'string' && sameResource(a, resource))) return undefined;
  return audiences.length === 0
    ? `its JWT access token names no audience, so it is not bound to ${resource}`
    : `its JWT access token is for ${audiences.map((a) => JSON.stringify(a)).join(', ')}, not ${resource}`;
}
