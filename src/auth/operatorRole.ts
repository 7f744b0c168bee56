import type { Config } from '../config/config.js';

/**
 * Who is an operator: a role inside a claim of the IdP's tokens, for the pages and the CLI alike
 * (OPERATOR_ROLE_CLAIM, dotted for a nested claim such as Keycloak's realm_access.roles; OPERATOR_ROLE).
 */
export type OperatorPolicy = Config['operators'];

/**
 * Whether the claims carry the operator role. The claim may be an array of
 * strings (most IdPs) or one space- or comma-separated string; anything else
 * carries no role.
 */
export function hasOperatorRole(claims: Readonly<Record<string, unknown>>, policy: OperatorPolicy): boolean {
  let value: unknown = claims;
  for (const part of policy.roleClaim.split('.')) {
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !Object.hasOwn(value, part))
      return false;
    value = (value as Record<string, unknown>)[part];
  }
  const roles =
    typeof value === 'string'
      ? value.split(/[\s,]+/)
      : Array.isArray(value)
        ? value.filter((r): r is string => typeof r === 'string')
        : [];
  return roles.includes(policy.role);
}
