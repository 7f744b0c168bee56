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

/** The demo users as the sign-in pages name them: every one, with its role (`ops (operator)`). */
export function demoUsersText(): string {
  const shown = devUsers.map((u) => (u.roles.length > 0 ? `${u.login} (${u.roles.join(', ')})` : u.login));
  return `${shown.slice(0, -1).join(', ')} and ${shown.at(-1)}`;
}

/**
 * The roles the development identity provider puts in each user's tokens, changeable while it
 * runs, as an administrator changes them at a real provider (tests demote an operator with it).
 */
export interface DevRoles {
  of(login: string): readonly string[];
  set(login: string, roles: readonly string[]): void;
}

/** Each demo user's roles, starting from `devUsers`. */
export function createDevRoles(): DevRoles {
  const roles = new Map(devUsers.map((u) => [u.login, u.roles]));
  return {
    of: (login) => roles.get(login) ?? [],
    set(login, next) {
      if (!roles.has(login)) throw new Error(`no demo user ${login}`);
      roles.set(login, [...next]);
    },
  };
}

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
