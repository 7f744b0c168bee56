import type { Config } from '../config/config.js';
import type { WebSession } from './webSessionRepo.js';

/**
 * Who is an operator: a role inside a claim of the IdP's tokens, for the pages and the CLI alike
 * (OPERATOR_ROLE_CLAIM, dotted for a nested claim such as Keycloak's realm_access.roles; OPERATOR_ROLE).
 */
export type OperatorPolicy = Config['operators'];

/**
 * Whether the claims carry the operator role. The claim is the top-level one
 * named exactly OPERATOR_ROLE_CLAIM when there is one (Auth0's custom claims
 * are URLs, `https://example.com/roles`, dots and all), else the dotted path.
 * It may be an array of strings (most IdPs) or one space- or comma-separated
 * string; anything else carries no role.
 */
export function hasOperatorRole(claims: Readonly<Record<string, unknown>>, policy: OperatorPolicy): boolean {
  const value = Object.hasOwn(claims, policy.roleClaim) ? claims[policy.roleClaim] : atPath(claims, policy.roleClaim);
  const roles =
    typeof value === 'string'
      ? value.split(/[\s,]+/)
      : Array.isArray(value)
        ? value.filter((r): r is string => typeof r === 'string')
        : [];
  return roles.includes(policy.role);
}

function atPath(claims: Readonly<Record<string, unknown>>, path: string): unknown {
  let value: unknown = claims;
  for (const part of path.split('.')) {
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !Object.hasOwn(value, part))
      return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

/**
 * How long what a sign-in proved of an operator holds: the role, read from the identity provider's
 * tokens at sign-in, for operator pages; the authentication itself (`auth_time`) for operator
 * actions. Past it, the browser signs in again (src/ops/operatorGuard.ts): a role removed at the
 * provider, or a browser left signed in, loses operator access within this bound.
 */
export const OPERATOR_PROOF_MAX_AGE_SECONDS = 5 * 60;

/**
 * What a session may do at operator routes at `now`: nothing (`none`: no operator role at
 * sign-in); sign in again first (`stale`: the role was read too long ago); read the pages
 * (`read`); or also act (`act`: the user authenticated at the provider within the bound).
 */
export function operatorStanding(
  session: Pick<WebSession, 'operator' | 'createdAt' | 'authenticatedAt'>,
  now: Date,
): 'none' | 'stale' | 'read' | 'act' {
  if (!session.operator) return 'none';
  const within = (at: Date | undefined) =>
    at !== undefined && now.getTime() - at.getTime() <= OPERATOR_PROOF_MAX_AGE_SECONDS * 1000;
  // A session is never re-checked, only replaced by a new sign-in: its creation is when the role was read.
  if (!within(session.createdAt)) return 'stale';
  return within(session.authenticatedAt) ? 'act' : 'read';
}
