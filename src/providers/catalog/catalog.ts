import { atlassian } from './atlassian.js';
import { type CatalogEntry, type CatalogEntryInput, CatalogEntrySchema } from './catalogEntry.js';
import { dropbox } from './dropbox.js';
import { github } from './github.js';
import { gitlab } from './gitlab.js';
import { google } from './google.js';
import { hubspot } from './hubspot.js';
import { linear } from './linear.js';
import { microsoft } from './microsoft.js';
import { notion } from './notion.js';
import { salesforce } from './salesforce.js';
import { slack } from './slack.js';

const written: readonly CatalogEntryInput[] = [
  github,
  google,
  microsoft,
  slack,
  atlassian,
  notion,
  linear,
  gitlab,
  hubspot,
  salesforce,
  dropbox,
];

/** Every catalog entry shipped with the broker, one file each (README.md beside this file), defaults filled; a malformed one fails at import. */
export const catalogEntries: readonly CatalogEntry[] = written.map((entry) => CatalogEntrySchema.parse(entry));

/** The catalog by id, for PROVIDERS_FILE entries that name one. */
export const catalog: ReadonlyMap<string, CatalogEntry> = new Map(catalogEntries.map((entry) => [entry.id, entry]));
