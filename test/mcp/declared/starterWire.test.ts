import { beforeAll, describe, expect, it } from 'vitest';
import type { DeclaredTool } from '../../../src/mcp/declared/compileDeclaredTool.js';
import { readStarterTools } from '../../../src/mcp/declared/starterTools.js';
import { declareTools } from '../../../src/mcp/declared/toolsFile.js';
import { providersForTools } from '../../../src/mcp/declared/toolsSetup.js';
import type { McpToolDeps } from '../../../src/mcp/toolDeps.js';
import { catalog } from '../../../src/providers/catalog/catalog.js';
import { parseProviders, type Provider } from '../../../src/providers/providerConfig.js';
import type { ConnectionRecord } from '../../../src/secrets/connectionsRepo.js';
import type { Fetch } from '../../../src/shared/httpClient.js';
import { TEST_SELF } from '../../support/brokerSelf.js';

// Each starter tool's request as it leaves the broker, and what it makes of
// the provider's answer: the compiled tool's operation performed through the
// bound fetch (connectionFetch.ts) of a provider configured from its catalog
// entry, with a fetch that records the request and answers as the provider's
// documentation shows. The emulated providers' starters also run end to end
// (starterTools.int.test.ts); this covers every one, Linear and Jira included.

const CLOUD_ID = '11223344-a1b2-3b33-c444-def123456789';
const TEAM_ID = '9cfb482a-81e3-4154-b5b9-2c805e70a02d';
const PARENT_ID = '59833787-2cf9-4fdf-8782-e53db20768a5';

interface Sent {
  method: string;
  url: URL;
  headers: Headers;
  json: unknown;
}

let tools: Map<string, DeclaredTool>;
let providers: Map<string, Provider>;

beforeAll(async () => {
  const { starters } = await readStarterTools();
  const scopes = (id: string) => [
    ...new Set([
      ...catalog.get(id)!.defaultScopes,
      ...[...starters.values()].filter((s) => s.catalog === id).flatMap((s) => s.entry['scopes'] as string[]),
    ]),
  ];
  const configured = parseProviders(
    ['github', 'google', 'slack', 'notion', 'linear', 'atlassian'].map((id) => ({
      id,
      catalog: id,
      clientId: `${id}-client`,
      clientSecret: 'not-a-real-secret',
      scopes: scopes(id),
    })),
    { allowLoopback: false, self: TEST_SELF },
  );
  providers = new Map(configured.map((p) => [p.id, p]));
  const declared = declareTools(
    [...starters.keys()].map((starter) => ({ starter })),
    { providers: providersForTools(configured, false), taken: [], starters },
    'starters',
  );
  tools = new Map(declared.map((t) => [t.name, t]));
});

/** Performs the starter once, as an accepted operation does, against a fetch answering `answer`. */
async function perform(
  name: string,
  args: Record<string, unknown>,
  answer: { status?: number; json: unknown },
  metadata: Record<string, string> = {},
) {
  const tool = tools.get(name)!;
  const provider = providers.get(tool.provider)!;
  const sent: Sent[] = [];
  const fetch = (async (input: Parameters<Fetch>[0], init?: Parameters<Fetch>[1]) => {
    const request = new Request(input, init);
    const text = await request.text();
    sent.push({
      method: request.method,
      url: new URL(request.url),
      headers: request.headers,
      json: text === '' ? undefined : JSON.parse(text),
    });
    return new Response(JSON.stringify(answer.json), {
      status: answer.status ?? 200,
      headers: { 'content-type': 'application/json' },
    });
  }) as Fetch;
  // The operation reads only the provider's configuration and the fetch from its deps (defineConnectionTool.ts); the rest is the broker's.
  const deps = {
    fetch,
    connection: { broker: { providers: new Map([[provider.id, { provider }]]) } },
  } as unknown as McpToolDeps;
  const connection: ConnectionRecord = {
    id: 'c1',
    subject: { iss: 'https://idp.example', sub: 'alice' },
    provider: provider.id,
    upstreamSubject: 'u1',
    upstreamName: 'alice',
    preferred: true,
    preferredChosen: false,
    grantedScopes: provider.scopes,
    metadata,
    apiBase: undefined,
    navigationId: undefined,
    connectedAt: new Date(0),
    state: 'active',
    version: 1,
    leaseUntil: undefined,
    lastUsedAt: undefined,
  };
  const call = tool.connectionCall(args, deps);
  const outcome = await call.perform({ token: 'token-of-alice', connection }, 'receipt-1');
  const result = call.render(outcome);
  expect(sent).toHaveLength(1);
  if (!('content' in result)) throw new Error(`${name} rendered no content`);
  return {
    sent: sent[0]!,
    outcome,
    text: (result.content[0] as { text: string }).text,
    structured: result.structuredContent,
  };
}

const query = (url: URL) => [...url.searchParams];

describe('the starter tools on the wire', () => {
  it('github_list_repos: GET /user/repos with the API version headers and the bearer token', async () => {
    const run = await perform(
      'github_list_repos',
      {},
      {
        json: [
          { full_name: 'alice/demo', visibility: 'public' },
          { full_name: 'acme/api', visibility: 'private' },
        ],
      },
    );
    expect(`${run.sent.method} ${run.sent.url.origin}${run.sent.url.pathname}`).toBe(
      'GET https://api.github.com/user/repos',
    );
    expect(query(run.sent.url)).toEqual([
      ['sort', 'pushed'],
      ['per_page', '10'],
      ['page', '1'],
    ]);
    expect(
      Object.fromEntries(['accept', 'x-github-api-version', 'authorization'].map((h) => [h, run.sent.headers.get(h)])),
    ).toEqual({
      accept: 'application/vnd.github+json',
      'x-github-api-version': '2022-11-28',
      authorization: 'Bearer token-of-alice',
    });
    expect(run.text).toBe('Repositories: alice/demo, acme/api');
    expect(run.structured).toEqual({ repositories: ['alice/demo', 'acme/api'], visibility: ['public', 'private'] });
  });

  it('github_list_repo_issues, github_get_issue, github_create_repo_issue, github_comment_issue: the issues API of one repository', async () => {
    const list = await perform(
      'github_list_repo_issues',
      { owner: 'acme', repo: 'api', labels: 'bug,ui' },
      { json: [{ number: 7, title: 'Crash', state: 'open' }] },
    );
    expect(`${list.sent.method} ${list.sent.url.pathname}`).toBe('GET /repos/acme/api/issues');
    expect(query(list.sent.url)).toEqual([
      ['state', 'open'],
      ['labels', 'bug,ui'],
      ['per_page', '10'],
      ['page', '1'],
    ]);
    expect(list.text).toBe('Issue numbers: 7\nTitles, in the same order: Crash');

    const issue = {
      number: 7,
      title: 'Crash',
      state: 'open',
      user: { login: 'alice' },
      labels: [{ name: 'bug' }],
      comments: 2,
      body: 'It crashes.',
      html_url: 'https://github.com/acme/api/issues/7',
    };
    const read = await perform('github_get_issue', { owner: 'acme', repo: 'api', number: 7 }, { json: issue });
    expect(`${read.sent.method} ${read.sent.url.pathname}${read.sent.url.search}`).toBe('GET /repos/acme/api/issues/7');
    expect(read.text).toBe(
      '#7 Crash (open; by alice; labels: bug; 2 comments): https://github.com/acme/api/issues/7\nIt crashes.',
    );

    const opened = await perform(
      'github_create_repo_issue',
      { owner: 'acme', repo: 'api', title: 'Crash', labels: ['bug'] },
      { status: 201, json: { number: 8, title: 'Crash', html_url: 'https://github.com/acme/api/issues/8' } },
    );
    expect(`${opened.sent.method} ${opened.sent.url.pathname}`).toBe('POST /repos/acme/api/issues');
    expect(opened.sent.json).toEqual({ title: 'Crash', labels: ['bug'] });
    expect(opened.sent.headers.get('content-type')).toBe('application/json');
    expect(opened.sent.headers.has('idempotency-key')).toBe(false);
    expect(opened.text).toBe('Opened #8 Crash: https://github.com/acme/api/issues/8');

    const comment = await perform(
      'github_comment_issue',
      { owner: 'acme', repo: 'api', number: 7, body: 'On it.' },
      {
        status: 201,
        json: { id: 99, user: { login: 'alice' }, html_url: 'https://github.com/acme/api/issues/7#issuecomment-99' },
      },
    );
    expect(`${comment.sent.method} ${comment.sent.url.pathname}`).toBe('POST /repos/acme/api/issues/7/comments');
    expect(comment.sent.json).toEqual({ body: 'On it.' });
    expect(comment.text).toBe('Comment 99 posted by alice: https://github.com/acme/api/issues/7#issuecomment-99');
  });

  it('google_calendar_*: the calendar list, and events of the primary calendar in start order', async () => {
    const calendars = await perform(
      'google_calendar_list_calendars',
      {},
      { json: { items: [{ id: 'alice@example.com', summary: 'Alice', accessRole: 'owner' }] } },
    );
    expect(
      `${calendars.sent.method} ${calendars.sent.url.origin}${calendars.sent.url.pathname}${calendars.sent.url.search}`,
    ).toBe('GET https://www.googleapis.com/calendar/v3/users/me/calendarList?maxResults=50');
    expect(calendars.text).toBe('Your calendars: Alice\nTheir ids, in the same order: alice@example.com');

    const events = await perform(
      'google_calendar_list_events',
      { time_min: '2026-05-04T00:00:00Z', query: 'standup' },
      {
        json: {
          items: [
            {
              summary: 'Standup',
              start: { dateTime: '2026-05-04T09:30:00+02:00' },
              htmlLink: 'https://www.google.com/calendar/event?eid=a',
            },
            {
              summary: 'Holiday',
              start: { date: '2026-05-05' },
              htmlLink: 'https://www.google.com/calendar/event?eid=b',
            },
          ],
          nextPageToken: 'n2',
        },
      },
    );
    expect(`${events.sent.method} ${events.sent.url.pathname}`).toBe('GET /calendar/v3/calendars/primary/events');
    expect(query(events.sent.url)).toEqual([
      ['timeMin', '2026-05-04T00:00:00Z'],
      ['q', 'standup'],
      ['maxResults', '10'],
      ['singleEvents', 'true'],
      ['orderBy', 'startTime'],
    ]);
    expect(events.text).toBe(
      'Events: Standup, Holiday\nStarts: 2026-05-04T09:30:00+02:00\nAll-day: 2026-05-05\nNext page: n2',
    );

    const created = await perform(
      'google_calendar_create_event',
      {
        summary: 'Review',
        start: '2026-05-04T14:00:00+02:00',
        end: '2026-05-04T15:00:00+02:00',
        time_zone: 'Europe/Paris',
      },
      {
        json: {
          summary: 'Review',
          start: { dateTime: '2026-05-04T14:00:00+02:00' },
          htmlLink: 'https://www.google.com/calendar/event?eid=c',
        },
      },
    );
    expect(`${created.sent.method} ${created.sent.url.pathname}${created.sent.url.search}`).toBe(
      'POST /calendar/v3/calendars/primary/events?sendUpdates=none',
    );
    expect(created.sent.json).toEqual({
      summary: 'Review',
      start: { dateTime: '2026-05-04T14:00:00+02:00', timeZone: 'Europe/Paris' },
      end: { dateTime: '2026-05-04T15:00:00+02:00', timeZone: 'Europe/Paris' },
    });
    expect(created.text).toBe(
      'Created Review (2026-05-04T14:00:00+02:00): https://www.google.com/calendar/event?eid=c',
    );
  });

  it("gmail_search_messages and gmail_read_message: ids by Gmail search, then one message's headers, repeated metadataHeaders", async () => {
    const found = await perform(
      'gmail_search_messages',
      { query: 'from:bob is:unread' },
      { json: { messages: [{ id: '18c1', threadId: '18c0' }], resultSizeEstimate: 1 } },
    );
    expect(`${found.sent.method} ${found.sent.url.pathname}`).toBe('GET /gmail/v1/users/me/messages');
    expect(query(found.sent.url)).toEqual([
      ['q', 'from:bob is:unread'],
      ['maxResults', '10'],
    ]);
    expect(found.text).toBe('About 1 messages match. Ids: 18c1\nNext page: (none)');

    const message = {
      id: '18c1',
      labelIds: ['INBOX', 'UNREAD'],
      snippet: 'Can you look at the report?',
      payload: {
        headers: [
          { name: 'From', value: 'Bob <bob@example.com>' },
          { name: 'Subject', value: 'Report' },
        ],
      },
    };
    const read = await perform('gmail_read_message', { id: '18c1' }, { json: message });
    expect(`${read.sent.url.pathname}${read.sent.url.search}`).toBe(
      '/gmail/v1/users/me/messages/18c1?format=metadata&metadataHeaders=From&metadataHeaders=To&metadataHeaders=Date&metadataHeaders=Subject',
    );
    expect(read.text).toBe(
      'From, Subject: Bob <bob@example.com>, Report\nLabels: INBOX, UNREAD\nCan you look at the report?',
    );
  });

  it('linear_*: GraphQL over POST /graphql, arguments as typed variables, a GraphQL error shown', async () => {
    const teams = await perform(
      'linear_list_teams',
      {},
      { json: { data: { teams: { nodes: [{ id: TEAM_ID, key: 'ENG', name: 'Engineering' }] } } } },
    );
    expect(`${teams.sent.method} ${teams.sent.url.origin}${teams.sent.url.pathname}`).toBe(
      'POST https://api.linear.app/graphql',
    );
    expect(teams.sent.json).toEqual({ query: 'query Teams { teams(first: 100) { nodes { id key name } } }' });
    expect(teams.text).toBe(`Teams: Engineering\nKeys: ENG\nIds, in the same order: ${TEAM_ID}\nError: (none)`);

    const mine = await perform(
      'linear_list_issues',
      { limit: 5 },
      {
        json: {
          data: {
            viewer: {
              assignedIssues: {
                nodes: [
                  {
                    identifier: 'ENG-12',
                    title: 'Fix',
                    url: 'https://linear.app/acme/issue/ENG-12',
                    state: { name: 'Todo' },
                  },
                ],
              },
            },
          },
        },
      },
    );
    expect(mine.sent.json).toEqual({
      query: expect.stringMatching(/^query MyIssues\(\$first: Int!\) \{ viewer \{ assignedIssues\(first: \$first/),
      variables: { first: 5 },
    });
    expect(mine.text).toBe('Issues: ENG-12\nTitles, in the same order: Fix\nStates: Todo\nError: (none)');

    const created = await perform(
      'linear_create_issue',
      { team_id: TEAM_ID, title: 'Fix login' },
      {
        json: {
          data: {
            issueCreate: {
              success: true,
              issue: { identifier: 'ENG-13', title: 'Fix login', url: 'https://linear.app/acme/issue/ENG-13' },
            },
          },
        },
      },
    );
    expect(created.sent.json).toEqual({
      query: expect.stringMatching(
        /^mutation CreateIssue\(\$input: IssueCreateInput!\) \{ issueCreate\(input: \$input\)/,
      ),
      variables: { input: { teamId: TEAM_ID, title: 'Fix login' } },
    });
    expect(created.text).toBe('Created ENG-13 Fix login: https://linear.app/acme/issue/ENG-13\nError: (none)');

    const refused = await perform(
      'linear_create_issue',
      { team_id: TEAM_ID, title: 'Fix login', priority: 2 },
      { json: { data: null, errors: [{ message: 'Entity not found: Team' }] } },
    );
    expect((refused.sent.json as { variables: unknown }).variables).toEqual({
      input: { teamId: TEAM_ID, title: 'Fix login', priority: 2 },
    });
    expect(refused.text).toBe('Created (none) (none): (none)\nError: Entity not found: Team');
  });

  it("jira_*: below /ex/jira/<the connection's cloudId>, JQL in the query, the description as an ADF document", async () => {
    const metadata = { cloudId: CLOUD_ID, siteUrl: 'https://acme.atlassian.net' };
    const found = await perform(
      'jira_search_issues',
      { jql: 'project = ENG AND statusCategory != Done', max_results: 5 },
      {
        json: {
          issues: [
            { id: '10001', key: 'ENG-1', fields: { summary: 'Crash on start', status: { name: 'To Do' } } },
            { id: '10002', key: 'ENG-2', fields: { summary: 'Slow login', status: { name: 'In Progress' } } },
          ],
          nextPageToken: 'tok2',
          isLast: false,
        },
      },
      metadata,
    );
    expect(`${found.sent.method} ${found.sent.url.origin}${found.sent.url.pathname}`).toBe(
      `GET https://api.atlassian.com/ex/jira/${CLOUD_ID}/rest/api/3/search/jql`,
    );
    expect(query(found.sent.url)).toEqual([
      ['jql', 'project = ENG AND statusCategory != Done'],
      ['maxResults', '5'],
      ['fields', 'summary,status'],
    ]);
    expect(found.text).toBe(
      'Issues: ENG-1, ENG-2\nSummaries, in the same order: Crash on start, Slow login\nStatuses: To Do, In Progress\nNext page: tok2',
    );

    const created = await perform(
      'jira_create_issue',
      { project: 'ENG', summary: 'Add dark mode', description: 'Users ask for it.' },
      {
        status: 201,
        json: {
          id: '10003',
          key: 'ENG-3',
          self: `https://api.atlassian.com/ex/jira/${CLOUD_ID}/rest/api/3/issue/10003`,
        },
      },
      metadata,
    );
    expect(`${created.sent.method} ${created.sent.url.pathname}`).toBe(`POST /ex/jira/${CLOUD_ID}/rest/api/3/issue`);
    expect(created.sent.json).toEqual({
      fields: {
        project: { key: 'ENG' },
        summary: 'Add dark mode',
        issuetype: { name: 'Task' },
        description: {
          type: 'doc',
          version: 1,
          content: [{ type: 'paragraph', content: [{ type: 'text', text: 'Users ask for it.' }] }],
        },
      },
    });
    expect(created.text).toBe('Created ENG-3');
  });

  it('notion_*: the pinned Notion-Version, a page search, a page with its first paragraph', async () => {
    const found = await perform(
      'notion_search_pages',
      { query: 'planning' },
      {
        json: {
          object: 'list',
          results: [
            {
              object: 'page',
              id: 'p1',
              url: 'https://www.notion.so/p1',
              properties: { title: { title: [{ plain_text: 'Planning' }] } },
            },
          ],
          next_cursor: null,
          has_more: false,
        },
      },
    );
    expect(`${found.sent.method} ${found.sent.url.origin}${found.sent.url.pathname}`).toBe(
      'POST https://api.notion.com/v1/search',
    );
    expect(found.sent.headers.get('notion-version')).toBe('2022-06-28');
    expect(found.sent.json).toEqual({
      query: 'planning',
      filter: { property: 'object', value: 'page' },
      page_size: 10,
    });
    expect(found.text).toBe(
      'Found: Planning\nLinks, in the same order: https://www.notion.so/p1\nMore with start_cursor: (none)',
    );

    const page = await perform(
      'notion_create_page',
      { parent_id: PARENT_ID, title: 'Notes', content: 'First line.' },
      { json: { object: 'page', id: 'p2', url: 'https://www.notion.so/Notes-p2' } },
    );
    expect(`${page.sent.method} ${page.sent.url.pathname}`).toBe('POST /v1/pages');
    expect(page.sent.json).toEqual({
      parent: { page_id: PARENT_ID },
      properties: { title: { title: [{ text: { content: 'Notes' } }] } },
      children: [
        {
          object: 'block',
          type: 'paragraph',
          paragraph: { rich_text: [{ type: 'text', text: { content: 'First line.' } }] },
        },
      ],
    });
    expect(page.text).toBe('Created the page p2: https://www.notion.so/Notes-p2');
  });

  it('slack_*: Web API methods with the user token; a refusal inside HTTP 200 is shown as the Slack error', async () => {
    const channels = await perform(
      'slack_list_channels',
      {},
      {
        json: {
          ok: true,
          channels: [
            { id: 'C1', name: 'general' },
            { id: 'C2', name: 'random' },
          ],
          response_metadata: { next_cursor: 'dGVhbTpDMDYxRkE1UEI=' },
        },
      },
    );
    expect(`${channels.sent.method} ${channels.sent.url.origin}${channels.sent.url.pathname}`).toBe(
      'GET https://slack.com/api/conversations.list',
    );
    expect(query(channels.sent.url)).toEqual([
      ['types', 'public_channel,private_channel'],
      ['exclude_archived', 'true'],
      ['limit', '100'],
    ]);
    expect(channels.text).toBe(
      'Channels: general, random\nTheir ids, in the same order: C1, C2\nMore with cursor: dGVhbTpDMDYxRkE1UEI=\nSlack error: (none)',
    );

    const posted = await perform(
      'slack_post_message',
      { channel: 'C1', text: 'Hello *team*' },
      { json: { ok: true, channel: 'C1', ts: '1700000000.000100', message: { text: 'Hello *team*' } } },
    );
    expect(`${posted.sent.method} ${posted.sent.url.pathname}`).toBe('POST /api/chat.postMessage');
    expect(posted.sent.json).toEqual({ channel: 'C1', text: 'Hello *team*' });
    expect(posted.text).toBe('Posted: true (channel C1, ts 1700000000.000100). Slack error: (none)');
    const refused = await perform(
      'slack_post_message',
      { channel: 'C9', text: 'Hello', thread_ts: '1700000000.000100' },
      { json: { ok: false, error: 'not_in_channel' } },
    );
    expect(refused.sent.json).toEqual({ channel: 'C9', text: 'Hello', thread_ts: '1700000000.000100' });
    expect(refused.text).toBe('Posted: false (channel (none), ts (none)). Slack error: not_in_channel');

    const found = await perform(
      'slack_search_messages',
      { query: 'quarterly in:#general' },
      {
        json: {
          ok: true,
          messages: {
            total: 1,
            matches: [
              {
                text: 'Quarterly numbers',
                channel: { name: 'general' },
                permalink: 'https://acme.slack.com/archives/C1/p1',
              },
            ],
          },
        },
      },
    );
    expect(`${found.sent.method} ${found.sent.url.pathname}`).toBe('GET /api/search.messages');
    expect(query(found.sent.url)).toEqual([
      ['query', 'quarterly in:#general'],
      ['count', '20'],
    ]);
    expect(found.text).toBe(
      '1 messages match: Quarterly numbers\nIn the channels, in the same order: general\nSlack error: (none)',
    );
  });
});
