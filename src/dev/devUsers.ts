import { timingSafeEqual } from 'node:crypto';

/**
 * Demo users of the development identity provider and the demo Report Service.
 * Development only: the password is public (README) and the same for everyone.
 */
export const DEV_PASSWORD = 'connect-dev';

export interface DevUser {
  login: string;
  name: string;
  email: string;
  /** The `roles` claim in this user's ID and access tokens (OPERATOR_ROLE_CLAIM's development default). */
  roles: readonly string[];
}

export const devUsers: readonly DevUser[] = [
  { login: 'alice', name: 'Alice Example', email: 'alice@example.test', roles: [] },
  { login: 'bob', name: 'Bob Example', email: 'bob@example.test', roles: [] },
  { login: 'mallory', name: 'Mallory Example', email: 'mallory@example.test', roles: [] },
  // The demo operator: may read the ledger pages and act on flows.
  { login: 'ops', name: 'Ops Example', email: 'ops@example.test', roles: ['operator'] },
];

export function findDevUser(login: string): DevUser | undefined {
  return devUsers.find((u) => u.login === login);
}

/** Checks a login and password in constant time for the password. */
export function verifyDevCredentials(login: string, password: string): DevUser | undefined {
  const user = findDevUser(login);
  const given = Buffer.from(password);
  const expected = Buffer.from(DEV_PASSWORD);
  const ok = given.length === expected.length && timingSafeEqual(given, expected);
  return user && ok ? user : undefined;
}
