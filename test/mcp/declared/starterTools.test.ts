import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { isMap, isSeq, parseDocument } from 'yaml';
import type { DeclaredTool } from '../../../src/mcp/declared/compileDeclaredTool.js';
import type { StarterTool } from '../../../src/mcp/declared/starterRef.js';
import { readStarterTools, STARTER_TOOLS_DIR } from '../../../src/mcp/declared/starterTools.js';
import { declareTools } from '../../../src/mcp/declared/toolsFile.js';
import { providersForTools } from '../../../src/mcp/declared/toolsSetup.js';
import { tools } from '../../../src/mcp/tools/registry.js';
import { catalogEntries } from '../../../src/providers/catalog/catalog.js';
import { parseProviders } from '../../../src/providers/providerConfig.js';
import { TEST_SELF } from '../../support/brokerSelf.js';

// The starter tools shipped in config/starter-tools/: every file reads, every
// starter compiles against a PROVIDERS_FILE that configures each catalog
// entry (as an operator writes it), and each follows the rules a starter
// keeps: its name, its documentation page, what its description tells the
// model, its idempotency.

// The family prefixes of each catalog entry's starters, and the host of the documentation they cite.
const FAMILIES: Record<string, { prefixes: string[]; docs: string }> = {
  github: { prefixes: ['github'], docs: 'docs.github.com' },
  google: { prefixes: ['google_calendar', 'gmail'], docs: 'developers.google.com' },
  slack: { prefixes: ['slack'], docs: 'docs.slack.dev' },
  notion: { prefixes: ['notion'], docs: 'developers.notion.com' },
  linear: { prefixes: ['linear'], docs: 'linear.app' },
  atlassian: { prefixes: ['jira'], docs: 'developer.atlassian.com' },
};

let starters: ReadonlyMap<string, StarterTool>;
let compiled: DeclaredTool[];

/** Every catalog entry configured under its own id, asking for its default scopes and every scope its starters need. */
function everyCatalogProvider() {
  const needed = (id: string) =>
    [...starters.values()].filter((s) => s.catalog === id).flatMap((s) => s.entry['scopes'] as string[]);
  const entries = catalogEntries.map((entry) => ({
    id: entry.id,
    catalog: entry.id,
    clientId: `${entry.id}-client`,
    clientSecret: 'not-a-real-secret',
    scopes: [...new Set([...entry.defaultScopes, ...needed(entry.id)])],
  }));
  return parseProviders(entries, { allowLoopback: false, self: TEST_SELF });
}

beforeAll(async () => {
  const read = await readStarterTools();
  expect(read.problems).toEqual([]);
  starters = read.starters;
  compiled = declareTools(
    [...starters.keys()].map((starter) => ({ starter })),
    {
      providers: providersForTools(everyCatalogProvider(), false),
      taken: tools.map((t) => ({ name: t.name, source: 'built-in' })),
      starters,
    },
    'every starter',
  );
});

describe('the starter tools', () => {
  it("are the curated set, each compiled for its catalog entry's provider as a starter", () => {
    expect(compiled.map((t) => [t.name, t.provider, t.source])).toEqual([
      ['jira_search_issues', 'atlassian', 'starter'],
      ['jira_create_issue', 'atlassian', 'starter'],
      ['github_list_repos', 'github', 'starter'],
      ['github_list_repo_issues', 'github', 'starter'],
      ['github_get_issue', 'github', 'starter'],
      ['github_create_repo_issue', 'github', 'starter'],
      ['github_comment_issue', 'github', 'starter'],
      ['google_calendar_list_calendars', 'google', 'starter'],
      ['google_calendar_list_events', 'google', 'starter'],
      ['google_calendar_create_event', 'google', 'starter'],
      ['gmail_search_messages', 'google', 'starter'],
      ['gmail_read_message', 'google', 'starter'],
      ['linear_list_teams', 'linear', 'starter'],
      ['linear_list_issues', 'linear', 'starter'],
      ['linear_create_issue', 'linear', 'starter'],
      ['notion_search_pages', 'notion', 'starter'],
      ['notion_create_page', 'notion', 'starter'],
      ['slack_list_channels', 'slack', 'starter'],
      ['slack_post_message', 'slack', 'starter'],
      ['slack_search_messages', 'slack', 'starter'],
    ]);
  });

  it('are named <family>_<verb>_<noun> after their catalog entry', () => {
    for (const starter of starters.values()) {
      const family = FAMILIES[starter.catalog];
      expect(family, `${starter.name}: a family for ${starter.catalog}`).toBeDefined();
      expect(
        family!.prefixes.some((prefix) => new RegExp(`^${prefix}_[a-z]+_[a-z_]+$`).test(starter.name)),
        starter.name,
      ).toBe(true);
    }
  });

  it('tell the model what they do, and that an unconnected user is asked to connect', () => {
    for (const tool of compiled) {
      const { description } = tool.descriptor as { description: string };
      expect(description, tool.name).toMatch(/Arguments?: |No arguments\./);
      expect(description, tool.name).toMatch(
        /If you have not connected \w+ yet, the result asks your host to open a connect link \(URL elicitation\); retry with the requestState after the user has connected\.$/,
      );
    }
  });

  it('state their idempotency when they write, and a POST that only reads says so', () => {
    for (const starter of starters.values()) {
      const request = starter.entry['request'] as { method: string };
      const annotations = starter.entry['annotations'] as { readOnlyHint?: boolean };
      if (request.method !== 'GET') expect(starter.entry['idempotency'], starter.name).toEqual({ mode: 'none' });
      expect(annotations.readOnlyHint, starter.name).toBe(
        request.method === 'GET' || !/_(create|comment|post)_/.test(starter.name),
      );
    }
    expect(compiled.filter((t) => t.idempotency !== 'none')).toEqual([]);
  });

  it("cite the provider's own documentation page above each tool", async () => {
    for (const file of new Set([...starters.values()].map((s) => s.file))) {
      const doc = parseDocument(await readFile(join(STARTER_TOOLS_DIR, file), 'utf8'));
      expect(isSeq(doc.contents), file).toBe(true);
      for (const item of isSeq(doc.contents) ? doc.contents.items : []) {
        const name = isMap(item) ? String(item.get('name')) : '?';
        const family = FAMILIES[starters.get(name)?.catalog ?? ''];
        // The comment line right above the entry (the first entry's comment holds the file's header too).
        const cited = /^ ?https:\/\/([^/\s]+)\/\S*/.exec(
          (isMap(item) ? (item.commentBefore ?? '') : '').split('\n').at(-1) ?? '',
        );
        expect(cited?.[1], `${file}: ${name} cites its page`).toBe(family?.docs);
      }
    }
  });
});
