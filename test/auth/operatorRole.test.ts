import { describe, expect, it } from 'vitest';
import { hasOperatorRole } from '../../src/auth/operatorRole.js';

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
    expect(hasOperatorRole({ 'realm_access.roles': ['broker-operator'] }, keycloak)).toBe(false);
    expect(hasOperatorRole(Object.create({ roles: ['operator'] }) as Record<string, unknown>, policy)).toBe(false);
  });
});
