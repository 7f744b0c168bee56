import { type DevUser, devUsers } from './devUsers.js';

/** A demo user as the GitHub emulator shows it: GitHub identifies an account by a stable numeric `id`. */
export interface GithubAccount {
  id: number;
  login: string;
  name: string;
  email: string;
}

// Fixed ids, so a connection's recorded upstream account survives a restart of the emulator.
const FIRST_ID = 9_000_001;

export function githubAccountOf(login: string): GithubAccount | undefined {
  const index = devUsers.findIndex((u) => u.login === login);
  const user: DevUser | undefined = devUsers[index];
  return user && { id: FIRST_ID + index, login: user.login, name: user.name, email: user.email };
}

/** Every demo user owns one public repository, `<login>/demo`, where anyone may open issues. */
export function repositoryExists(owner: string, name: string): boolean {
  return name === 'demo' && githubAccountOf(owner) !== undefined;
}
