import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { DeclaredTool } from '../../../src/mcp/declared/compileDeclaredTool.js';
import { loadDeclaredTools } from '../../../src/mcp/declared/toolsSetup.js';
import { tools } from '../../../src/mcp/tools/registry.js';
import type { Fetch } from '../../../src/shared/httpClient.js';
import { startBrokerStack, type BrokerStack } from '../../support/brokerStack.js';
import {
  consentAndAuthorize,
  elicitConnection,
  GITHUB_FORMS,
  openConnectLink,
  retryConnection,
} from '../../support/connectFlow.js';
import { startGoogleEmulator, type GoogleEmulator, type GoogleUser } from '../../support/emulators/google.js';
import { connectThroughProvider, hostMapOf } from '../../support/emulators/googleMicrosoftShared.js';
import { startNotionEmulator, type NotionEmulator } from '../../support/emulators/notion.js';
import { startSlackEmulator, type SlackEmulator } from '../../support/emulators/slack.js';
import { emulatedFlow, type EmulatedFlow } from '../../support/emulators/slackNotionShared.js';
import { mapHosts } from '../../support/hostMap.js';
import { internalErrors } from '../../support/legacySdkClient.js';
import { callTool, mcpPost, meta, tokenFor, type WireResponse } from '../../support/mcpWire.js';

// Starter tools enabled by name in a TOOLS_FILE, loaded as start-up loads it
// (development: the GitHub-like provider is `github`), and run end to end
// through the broker stack against the emulated providers on their real hosts
// (test/support/emulators/): the user connects, the host retries, and the
// request the provider received and the result the host got are checked.
// Slack is configured under an id of the operator's own (`slack-work`).

const CALENDAR = 'https://www.googleapis.com/auth/calendar.readonly';
const GOOGLE_CLIENT = {
  clientId: '294017725839-starters.apps.googleusercontent.com',
  clientSecret: 'GOCSPX-canary-starters-secret',
};
const ALICE_AT_GOOGLE: GoogleUser = {
  email: 'alice.starters@gmail.com',
  sub: '104925847283749283799',
  name: 'alice at Google',
  calendars: [
    { id: 'alice.starters@gmail.com', summary: 'alice.starters@gmail.com', primary: true },
    { id: 'team-alice@group.calendar.google.com', summary: 'Team' },
  ],
};

// What PROVIDERS_FILE configures besides the development providers (client ids and secrets come from the emulators).
const PROVIDERS = [
  { id: 'slack-work', catalog: 'slack', scopes: ['search:read'] },
  { id: 'notion', catalog: 'notion', scopes: [] },
  { id: 'google', catalog: 'google', scopes: ['openid', 'email', CALENDAR] },
];

const TOOLS_FILE = [
  { starter: 'github_create_repo_issue' },
  { starter: 'github_list_repo_issues' },
  { starter: 'github_get_issue' },
  { starter: 'github_comment_issue' },
  { starter: 'slack_search_messages' },
  { starter: 'notion_search_pages', provider: 'notion' },
  { starter: 'google_calendar_list_calendars' },
];

interface Sent {
  method: string;
  url: URL;
  headers: Headers;
  body: string | undefined;
}

describe('starter tools enabled by name, against the emulated providers', () => {
  let stack: BrokerStack;
  let dir: string;
  let declared: DeclaredTool[];
  let slack: SlackEmulator;
  let notion: NotionEmulator;
  let google: GoogleEmulator;
  let emulated: EmulatedFlow;
  let alice: string;
  const sent: Sent[] = [];
  const hosts = () => ({ 'slack.com': slack.origin, 'api.notion.com': notion.origin, ...hostMapOf(google) });
  const recording = (fetch: Fetch): Fetch =>
    (async (input, init) => {
      const request = new Request(input, init);
      sent.push({
        method: request.method,
        url: new URL(request.url),
        headers: request.headers,
        body: typeof init?.body === 'string' ? init.body : undefined,
      });
      return fetch(input, init);
    }) as Fetch;
  const sentTo = (path: string) => sent.filter((s) => s.url.pathname === path);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'starter-tools-'));
    const file = join(dir, 'tools.yaml');
    await writeFile(file, stringify(TOOLS_FILE));
    declared = await loadDeclaredTools({
      toolsFile: file,
      dev: true,
      fileProviders: PROVIDERS,
      builtIn: tools,
      modules: [],
    });
    stack = await startBrokerStack({
      retryWaitMs: 200,
      extraTools: declared,
      extraProviders: async ({ brokerUrl, tls }) => {
        slack = await startSlackEmulator({ tls, redirectUri: `${brokerUrl}/oauth/callback/slack-work` });
        notion = await startNotionEmulator({ tls, redirectUri: `${brokerUrl}/oauth/callback/notion` });
        google = await startGoogleEmulator({
          tls,
          client: { ...GOOGLE_CLIENT, redirectUris: [`${brokerUrl}/oauth/callback/google`] },
          users: [ALICE_AT_GOOGLE],
        });
        const clients: Record<string, { clientId: string; clientSecret: string }> = {
          'slack-work': slack,
          notion,
          google: GOOGLE_CLIENT,
        };
        return PROVIDERS.map((p) => ({
          ...p,
          clientId: clients[p.id]!.clientId,
          clientSecret: clients[p.id]!.clientSecret,
        }));
      },
      brokerFetch: (fetch) => recording(mapHosts(fetch, hosts())),
    });
    emulated = emulatedFlow(stack, 'slack-work', mapHosts(stack.fetch, hosts()));
    alice = await tokenFor(stack, 'alice');
  });
  afterEach(() => {
    expect(internalErrors(stack), 'the broker logged no internal error').toEqual([]);
  });
  afterAll(async () => {
    await stack?.close();
    await Promise.all([slack?.close(), notion?.close(), google?.close()]);
    await rm(dir, { recursive: true, force: true });
  });

  const text = (response: WireResponse) =>
    (response.json.result?.['content'] as { text: string }[] | undefined)?.[0]?.text;
  const structured = (response: WireResponse) => response.json.result?.['structuredContent'] as Record<string, unknown>;

  it('serves each starter bound to the provider configured from its catalog entry, with the schema it declares', async () => {
    expect(declared.map((t) => [t.name, t.provider, t.source])).toEqual([
      ['github_create_repo_issue', 'github', 'starter'],
      ['github_list_repo_issues', 'github', 'starter'],
      ['github_get_issue', 'github', 'starter'],
      ['github_comment_issue', 'github', 'starter'],
      ['slack_search_messages', 'slack-work', 'starter'],
      ['notion_search_pages', 'notion', 'starter'],
      ['google_calendar_list_calendars', 'google', 'starter'],
    ]);
    const listed = await mcpPost(
      stack,
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: meta() } },
      { token: alice },
    );
    const byName = new Map(
      (listed.json.result?.['tools'] as { name: string; inputSchema: unknown; annotations?: unknown }[]).map((t) => [
        t.name,
        t,
      ]),
    );
    expect(byName.get('github_list_repo_issues')).toMatchObject({
      inputSchema: {
        type: 'object',
        additionalProperties: false,
        required: ['owner', 'repo'],
        properties: {
          state: { type: 'string', enum: ['open', 'closed', 'all'], default: 'open' },
          per_page: { type: 'integer', minimum: 1, maximum: 100 },
        },
      },
      annotations: { readOnlyHint: true, openWorldHint: true },
    });
    expect(byName.get('slack_search_messages')).toMatchObject({ inputSchema: { required: ['query'] } });
  });

  it("GitHub-like: connect, open an issue once, list the repository's issues, read it, comment on it", async () => {
    const args = {
      owner: 'alice',
      repo: 'demo',
      title: 'Starter tools work',
      body: 'Opened by a starter.',
      labels: ['docs'],
    };
    const elicited = await elicitConnection(stack, alice, 'github_create_repo_issue', args);
    expect(elicited.message).toContain('To use github_create_repo_issue, connect your GitHub (development) account');
    expect(sentTo('/api/v3/repos/alice/demo/issues')).toEqual([]);
    const done = await consentAndAuthorize(
      stack,
      await openConnectLink(stack, elicited.url, 'alice'),
      'alice',
      'Allow',
      GITHUB_FORMS,
    );
    expect(done.text).toContain('GitHub (development) is connected');

    const opened = await retryConnection(
      stack,
      alice,
      'github_create_repo_issue',
      args,
      elicited.requestState,
      'accept',
    );
    const number = structured(opened)['number'] as number;
    expect(text(opened)).toBe(
      `Opened #${number} Starter tools work: ${stack.dev.github!.origin}/alice/demo/issues/${number}`,
    );
    const posts = sentTo('/api/v3/repos/alice/demo/issues').filter((s) => s.method === 'POST');
    expect(posts).toHaveLength(1);
    expect(JSON.parse(posts[0]!.body!)).toEqual({
      title: 'Starter tools work',
      body: 'Opened by a starter.',
      labels: ['docs'],
    });
    expect(posts[0]!.headers.get('x-github-api-version')).toBe('2022-11-28');
    expect(posts[0]!.headers.has('idempotency-key')).toBe(false);
    // The retry again answers from the receipt: no second issue.
    const again = await retryConnection(
      stack,
      alice,
      'github_create_repo_issue',
      args,
      elicited.requestState,
      'accept',
    );
    expect(structured(again)).toEqual(structured(opened));
    expect(sentTo('/api/v3/repos/alice/demo/issues').filter((s) => s.method === 'POST')).toHaveLength(1);

    const listed = await callTool(
      stack,
      alice,
      'github_list_repo_issues',
      { owner: 'alice', repo: 'demo', per_page: 5 },
      {},
      {},
    );
    const list = sentTo('/api/v3/repos/alice/demo/issues').at(-1)!;
    expect(`${list.method} ${list.url.search}`).toBe('GET ?state=open&per_page=5&page=1');
    expect(structured(listed)['numbers']).toContain(number);
    expect(text(listed)).toMatch(
      new RegExp(`^Issue numbers: .*\\b${number}\\b.*\nTitles, in the same order: .*Starter tools work`),
    );

    const read = await callTool(stack, alice, 'github_get_issue', { owner: 'alice', repo: 'demo', number }, {}, {});
    expect(text(read)).toBe(
      `#${number} Starter tools work (open; by alice; labels: (none); 0 comments): ${stack.dev.github!.origin}/alice/demo/issues/${number}\nOpened by a starter.`,
    );

    const commented = await callTool(
      stack,
      alice,
      'github_comment_issue',
      { owner: 'alice', repo: 'demo', number, body: 'And a comment.' },
      {},
      {},
    );
    expect(text(commented)).toMatch(
      new RegExp(
        `^Comment \\d+ posted by alice: ${stack.dev.github!.origin}/alice/demo/issues/${number}#issuecomment-\\d+$`,
      ),
    );
    expect(sentTo(`/api/v3/repos/alice/demo/issues/${number}/comments`).map((s) => [s.method, s.body])).toEqual([
      ['POST', JSON.stringify({ body: 'And a comment.' })],
    ]);
    const reread = await callTool(stack, alice, 'github_get_issue', { owner: 'alice', repo: 'demo', number }, {}, {});
    expect(structured(reread)).toMatchObject({ number, comments: 1 });
  });

  it('Slack (as slack-work): connect at slack.com, then search.messages with the user token and the query in the URL', async () => {
    const args = { query: 'quarterly' };
    const elicited = await elicitConnection(stack, alice, 'slack_search_messages', args);
    const { browser, page: consent } = await emulated.toConsent(elicited.url, 'alice');
    expect(new URL(consent.url).searchParams.get('user_scope')).toBe('search:read');
    const done = emulated.keep(await browser.submitForm(consent, { user: 'alice' }, { button: 'Allow' }));
    expect(new URL(done.redirects.at(-1)!).pathname).toBe('/oauth/callback/slack-work');

    const answered = await retryConnection(
      stack,
      alice,
      'slack_search_messages',
      args,
      elicited.requestState,
      'accept',
    );
    expect(slack.apiCalls).toHaveLength(1);
    const call = slack.apiCalls[0]!;
    expect(`${call.method} ${call.path}?${call.query.toString()}`).toBe(
      'GET /api/search.messages?query=quarterly&count=20',
    );
    expect(call.headers.authorization).toBe(`Bearer ${slack.tokensOf('alice').at(-1)!.user}`);
    expect(text(answered)).toBe(
      '2 messages match: The quarterly report is in #general, Quarterly numbers look good\nIn the channels, in the same order: general, random\nSlack error: (none)',
    );
    expect(structured(answered)).toMatchObject({
      ok: true,
      total: 2,
      links: [
        expect.stringMatching(/^https:\/\/emulated\.slack\.com\/archives\/C0EMUGEN01\//),
        expect.stringMatching(/\/C0EMURND01\//),
      ],
    });
    emulated.expectNoneShown(slack.issued());
  });

  it('Notion: connect at api.notion.com, then POST /v1/search with the page filter and the pinned Notion-Version', async () => {
    const args = { query: 'Quarterly' };
    const elicited = await elicitConnection(stack, alice, 'notion_search_pages', args);
    const { browser, page: consent } = await emulated.toConsent(elicited.url, 'alice');
    const done = await browser.submitForm(consent, { user: 'alice' }, { button: 'Allow' });
    expect(done.text).toContain('Notion is connected');

    const answered = await retryConnection(stack, alice, 'notion_search_pages', args, elicited.requestState, 'accept');
    expect(notion.apiCalls).toHaveLength(1);
    const call = notion.apiCalls[0]!;
    expect(`${call.method} ${call.path}`).toBe('POST /v1/search');
    expect(call.contentType).toBe('application/json');
    expect(JSON.parse(call.body)).toEqual({
      query: 'Quarterly',
      filter: { property: 'object', value: 'page' },
      page_size: 10,
    });
    expect(call.headers['notion-version']).toBe('2022-06-28');
    expect(call.headers.authorization).toBe(`Bearer ${notion.tokensOf('alice').at(-1)}`);
    const urls = structured(answered)['urls'] as string[];
    expect(urls).toHaveLength(2);
    expect(text(answered)).toBe(
      `Found: Quarterly planning, Quarterly review notes\nLinks, in the same order: ${urls.join(', ')}\nMore with start_cursor: (none)`,
    );
  });

  it("Google: connect at accounts.google.com, then the calendar list with the user's token", async () => {
    const received: string[] = [];
    const { retried, trip } = await connectThroughProvider(
      stack,
      google,
      { login: 'alice', account: ALICE_AT_GOOGLE.email, tool: 'google_calendar_list_calendars' },
      received,
    );
    expect(trip.authorizeUrl.searchParams.get('scope')).toBe(`openid email ${CALENDAR}`);
    const calls = google.seen.filter(
      (s) => s.host === 'www.googleapis.com' && s.path === '/calendar/v3/users/me/calendarList',
    );
    expect(calls).toHaveLength(1);
    expect(calls[0]!.query.toString()).toBe('maxResults=50');
    expect(calls[0]!.headers.authorization).toBe(
      `Bearer ${google.grants.valuesOf(ALICE_AT_GOOGLE.email, 'access_token').at(-1)}`,
    );
    expect(text(retried!)).toBe(
      'Your calendars: alice.starters@gmail.com, Team\nTheir ids, in the same order: alice.starters@gmail.com, team-alice@group.calendar.google.com',
    );
    expect(structured(retried!)).toEqual({
      calendars: ['alice.starters@gmail.com', 'Team'],
      ids: ['alice.starters@gmail.com', 'team-alice@group.calendar.google.com'],
      roles: ['owner', 'owner'],
    });
  });
});
