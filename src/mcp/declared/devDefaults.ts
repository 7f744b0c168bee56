import { fileURLToPath } from 'node:url';

// What npm start configures in development besides the operator's files, as
// plain facts: start-up's early checks and the CLI read them in every mode, so
// they live here rather than in src/dev/, which production never loads.

/** The development providers devStack.ts configures, by id, and the scopes their entries ask for. */
export const DEV_PROVIDER_SCOPES = {
  reports: ['openid', 'reports:read', 'reports:write'],
  github: ['repo', 'read:user'],
} as const satisfies Record<string, readonly string[]>;

/** The tools file npm start loads in development when TOOLS_FILE is unset: tools declared on the GitHub-like provider. */
export const DEV_TOOLS_FILE = fileURLToPath(new URL('../../../config/dev-tools.yaml', import.meta.url));
