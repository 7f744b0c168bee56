import { describe, expect, it } from 'vitest';
import { hasOperatorRole, OPERATOR_PROOF_MAX_AGE_SECONDS, operatorStanding } from '../../src/auth/operatorRole.js';

describe('hasOperatorRole', () => {
  const policy = { roleClaim: 'roles', role: 'operator' };

  it('finds the role in an array, or in a space- or comma-separated string', () => {
    expect(hasOperatorRole({ roles: ['viewer', 'operator'] }, policy)).toBe(true);
    expect(hasOperatorRole({ roles: 'viewer operator' }, policy)).toBe(true);
    expect(hasOperatorRole({ roles: 'viewer,operator' }, policy)).toBe(true);
  });

  it('refuses look-alikes, other types and a missing claim', () => {
    for (const roles of [
      ['operators'],
      ['Operator'],
      'superoperator',
      ['op erator'],
      { operator: true },
      1,
      null,
      [['operator']],
    ]) {
      expect(hasOperatorRole({ roles }, policy), JSON.stringify(roles)).toBe(false);
    }
    expect(hasOperatorRole({}, policy)).toBe(false);
    expect(hasOperatorRole({ role: ['operator'] }, policy)).toBe(false);
  });

  it('follows a dotted path to a nested claim, and only own properties', () => {
    const keycloak = { roleClaim: 'realm_access.roles', role: 'broker-operator' };
    expect(hasOperatorRole({ realm_access: { roles: ['broker-operator'] } }, keycloak)).toBe(true);
    expect(hasOperatorRole({ realm_access: ['broker-operator'] }, keycloak)).toBe(false);
    expect(hasOperatorRole(Object.create({ roles: ['operator'] }) as Record<string, unknown>, policy)).toBe(false);
  });

  it("reads a top-level claim named exactly so before the dotted path (Auth0's namespaced claims)", () => {
    const auth0 = { roleClaim: 'https://broker.example.com/roles', role: 'operator' };
    expect(hasOperatorRole({ 'https://broker.example.com/roles': ['operator'] }, auth0)).toBe(true);
    expect(hasOperatorRole({ 'https://broker.example.com/roles': ['viewer'] }, auth0)).toBe(false);
    // The exact name wins: a nested claim along the same dots is not read beside it.
    const keycloak = { roleClaim: 'realm_access.roles', role: 'broker-operator' };
    expect(hasOperatorRole({ 'realm_access.roles': ['broker-operator'] }, keycloak)).toBe(true);
    expect(
      hasOperatorRole({ 'realm_access.roles': ['viewer'], realm_access: { roles: ['broker-operator'] } }, keycloak),
    ).toBe(false);
  });
});

describe('operatorStanding', () => {
  const signedIn = new Date('2030-01-01T12:00:00Z');
  const at = (ms: number) => new Date(signedIn.getTime() + ms);
  const bound = OPERATOR_PROOF_MAX_AGE_SECONDS * 1000;
  const session = (operator: boolean, authenticatedAt?: Date | 'unknown') => ({
    operator,
    createdAt: signedIn,
    authenticatedAt: authenticatedAt === 'unknown' ? undefined : (authenticatedAt ?? signedIn),
  });

  it('lets an operator act within five minutes of authenticating, and read within five of the sign-in', () => {
    expect(OPERATOR_PROOF_MAX_AGE_SECONDS).toBe(300);
    expect(operatorStanding(session(true), at(0))).toBe('act');
    expect(operatorStanding(session(true), at(bound))).toBe('act');
    expect(operatorStanding(session(true), at(bound + 1))).toBe('stale');
    // Authenticated at the provider long before this sign-in: the pages, not the actions.
    expect(operatorStanding(session(true, at(-bound - 1)), at(0))).toBe('read');
    expect(operatorStanding(session(true, 'unknown'), at(0))).toBe('read');
  });

  it('gives a session without the role nothing, however fresh', () => {
    expect(operatorStanding(session(false), at(0))).toBe('none');
    expect(operatorStanding(session(false), at(bound + 1))).toBe('none');
  });
});
