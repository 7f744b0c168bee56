import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UrlElicitationRequiredError } from '@modelcontextprotocol/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadDeclaredTools } from '../../../src/mcp/declared/toolsSetup.js';
import type { DeclaredTool } from '../../../src/mcp/declared/compileDeclaredTool.js';
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
import { devGithubToken } from '../../support/devGithubReader.js';
import { closeLegacy, connectLegacy, internalErrors, until } from '../../support/legacySdkClient.js';
import { callTool, mcpPost, meta, tokenFor } from '../../support/mcpWire.js';

// Declared tools end to end against the GitHub-like development provider,
// through the broker stack: the development tools file (config/dev-tools.yaml)
// and a test file, both loaded by the loader src/main.ts uses. Every request
// the broker sends to a provider is recorded, so "nothing was sent" is seen.

interface Sent {
  method: string;
  url: URL;
  headers: Headers;
}

// Tools only this test declares: a body with an array member and an idempotency header (a 422 from
// GitHub for an unknown assignee), and a path whose variables are bounded strings with no pattern.
const TEST_TOOLS = [
  {
    name: 'test_open_assigned_issue',
    title: 'Open an assigned issue',
    description: 'Opens an issue assigned to someone.',
    provider: 'github',
    scopes: ['repo'],
    inputSchema: {
      type: 'object',
      additionalProperties: false,
      required: ['owner', 'repo', 'title', 'assignee'],
      properties: {
        owner: { type: 'string', maxLength: 39 },
        repo: { type: 'string', maxLength: 100 },
        title: { type: 'string', maxLength: 256 },
        assignee: { type: 'string', maxLength: 39 },
      },
    },
    request: {
      method: 'POST',
      path: '/repos/{owner}/{repo}/issues',
      body: { json: { title: '{title}', assignees: ['{assignee}'] } },
    },
    idempotency: { mode: 'header', header: 'Idempotency-Key' },
    response: { fields: { number: 'number' }, text: 'Opened #{number}' },
  },
  {
    name: 'test_issue_by_path',
    title: 'Read an issue by path',
    description: 'Reads an issue; owner and repo are any bounded strings.',
    provider: 'github',
    scopes: ['repo'],
    inputSchema: {
      type: 'object',
      additionalProperties: false,
      required: ['owner', 'repo', 'number'],
      properties: {
        owner: { type: 'string', maxLength: 1_000_000 },
        repo: { type: 'string', maxLength: 1_000_000 },
        number: { type: 'integer', minimum: 1 },
      },
    },
    request: { method: 'GET', path: '/repos/{owner}/{repo}/issues/{number}' },
    response: { fields: { title: 'title' } },
  },
];

describe('tools declared in a file, through the broker stack', () => {
  let stack: BrokerStack;
  let dir: string;
  let declared: DeclaredTool[];
  const sent: Sent[] = [];
  const tokens: Record<string, string> = {};
  const recording = (stackFetch: Fetch): Fetch =>
    (async (input, init) => {
      const request = new Request(input, init);
      sent.push({ method: request.method, url: new URL(request.url), headers: request.headers });
      return stackFetch(input, init);
    }) as Fetch;
  const toRepos = () => sent.filter((s) => s.url.pathname.includes('/repos/'));

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'declared-tools-'));
    const testFile = join(dir, 'tools.yaml');
    await writeFile(testFile, stringify(TEST_TOOLS));
    // As npm start loads them: the development default (no TOOLS_FILE), then an operator's file.
    const development = await loadDeclaredTools({
      toolsFile: undefined,
      dev: true,
      fileProviders: [],
      builtIn: tools,
      modules: [],
    });
    const own = await loadDeclaredTools({
      toolsFile: testFile,
      dev: true,
      fileProviders: [],
      builtIn: tools,
      modules: development,
    });
    declared = [...development, ...own];
    stack = await startBrokerStack({ extraTools: declared, brokerFetch: recording });
    for (const login of ['alice', 'bob', 'mallory']) tokens[login] = await tokenFor(stack, login);
  });
  afterEach(() => {
    expect(internalErrors(stack), 'the broker logged no internal error').toEqual([]);
  });
  afterAll(async () => {
    await stack?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const query = async (sql: string, params: unknown[] = []) => (await stack.db.pool.query(sql, params)).rows;
  const connect = async (login: string, url: string) => {
    const done = await consentAndAuthorize(
      stack,
      await openConnectLink(stack, url, login),
      login,
      'Allow',
      GITHUB_FORMS,
    );
    expect(done.text).toContain('GitHub (development) is connected');
  };
  const structured = (response: Awaited<ReturnType<typeof callTool>>) =>
    response.json.result?.['structuredContent'] as Record<string, unknown>;
  const text = (response: Awaited<ReturnType<typeof callTool>>) =>
    (response.json.result?.['content'] as { text: string }[] | undefined)?.[0]?.text;
  let issueNumber = 0;

  it("lists the development file's tools beside the built-in ones, with the JSON Schema the file declares", async () => {
    expect(declared.map((t) => [t.name, t.idempotency])).toEqual([
      ['github_get_issue', 'none'],
      ['github_comment_issue', 'none'],
      ['test_open_assigned_issue', 'header'],
      ['test_issue_by_path', 'none'],
    ]);
    const listed = await mcpPost(
      stack,
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: meta() } },
      { token: tokens['alice'] },
    );
    const byName = new Map(
      (listed.json.result?.['tools'] as { name: string; inputSchema: unknown; annotations?: unknown }[]).map((t) => [
        t.name,
        t,
      ]),
    );
    expect([...byName.keys()]).toEqual(
      expect.arrayContaining(['github_create_issue', 'github_list_issues', 'github_get_issue', 'github_comment_issue']),
    );
    expect(byName.get('github_comment_issue')).toMatchObject({
      inputSchema: {
        type: 'object',
        additionalProperties: false,
        required: ['owner', 'repo', 'number', 'body'],
        properties: {
          number: { type: 'integer', minimum: 1 },
          body: { type: 'string', minLength: 1, maxLength: 65536 },
        },
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    });
  });

  it('asks alice to connect (URL elicitation), and after she connected answers a 404 from GitHub as a clear tool error', async () => {
    const args = { owner: 'alice', repo: 'demo', number: 999_999 };
    const elicited = await elicitConnection(stack, tokens['alice']!, 'github_get_issue', args);
    expect(elicited.message).toContain('To use github_get_issue, connect your GitHub (development) account');
    expect(toRepos()).toEqual([]);
    await connect('alice', elicited.url);
    const answered = await retryConnection(
      stack,
      tokens['alice']!,
      'github_get_issue',
      args,
      elicited.requestState,
      'accept',
    );
    expect(answered.json.result).toMatchObject({
      resultType: 'complete',
      isError: true,
      structuredContent: { error: 'provider_refused', httpStatus: 404 },
    });
    expect(text(answered)).toBe('GitHub (development) refused to run github_get_issue (HTTP 404: Not Found).');
    expect(toRepos().map((s) => `${s.method} ${s.url.pathname}`)).toEqual([
      'GET /api/v3/repos/alice/demo/issues/999999',
    ]);
  });

  it('reads an issue once connected, picking the declared fields', async () => {
    const created = await callTool(
      stack,
      tokens['alice']!,
      'github_create_issue',
      { repository: 'alice/demo', title: 'Declared tools test' },
      {},
      {},
    );
    issueNumber = (structured(created)['issue'] as { number: number }).number;
    const read = await callTool(
      stack,
      tokens['alice']!,
      'github_get_issue',
      { owner: 'alice', repo: 'demo', number: issueNumber },
      {},
      {},
    );
    expect(read.json.result).toMatchObject({
      resultType: 'complete',
      structuredContent: {
        number: issueNumber,
        title: 'Declared tools test',
        state: 'open',
        author: 'alice',
        labels: [],
        comments: 0,
      },
    });
    expect(text(read)).toBe(
      `#${issueNumber} Declared tools test (open; by alice; labels: (none); 0 comments): ${stack.dev.github!.origin}/alice/demo/issues/${issueNumber}`,
    );
  });

  it('comments once for bob: connect, the retried call performed once, the recorded outcome on a further retry', async () => {
    const args = { owner: 'alice', repo: 'demo', number: issueNumber, body: 'Seen it too.' };
    const elicited = await elicitConnection(stack, tokens['bob']!, 'github_comment_issue', args);
    await connect('bob', elicited.url);
    const before = toRepos().length;
    const accepted = await retryConnection(
      stack,
      tokens['bob']!,
      'github_comment_issue',
      args,
      elicited.requestState,
      'accept',
    );
    expect(accepted.json.result).toMatchObject({ resultType: 'complete', structuredContent: { author: 'bob' } });
    const again = await retryConnection(
      stack,
      tokens['bob']!,
      'github_comment_issue',
      args,
      elicited.requestState,
      'accept',
    );
    expect(structured(again)).toEqual(structured(accepted));
    expect(text(again)).toBe(
      `Comment ${String(structured(accepted)['id'])} posted by bob: ${String(structured(accepted)['url'])}`,
    );

    const posts = toRepos().slice(before);
    expect(posts.map((s) => `${s.method} ${s.url.pathname}`)).toEqual([
      `POST /api/v3/repos/alice/demo/issues/${issueNumber}/comments`,
    ]);
    // Mode none: no idempotency key goes to GitHub.
    expect(posts[0]!.headers.get('idempotency-key')).toBeNull();
    expect(
      await query(
        "SELECT r.lineage, r.outcome_status FROM operation_receipts r JOIN elicitation_navigations n ON n.id = r.navigation_id WHERE n.tool = 'github_comment_issue'",
      ),
    ).toEqual([{ lineage: 'mrtr', outcome_status: 'succeeded' }]);
    // At the emulator, through its own API: one comment.
    const github = stack.dev.github!;
    const token = await devGithubToken(github, stack.fetch, 'alice');
    const issue = (await (
      await stack.fetch(`${github.apiUrl}/repos/alice/demo/issues/${issueNumber}`, {
        headers: { authorization: `Bearer ${token}` },
      })
    ).json()) as { comments: number };
    expect(issue.comments).toBe(1);
  });

  it('sends the receipt id as the Idempotency-Key, and answers a 422 from GitHub as a clear tool error', async () => {
    const args = { owner: 'mallory', repo: 'demo', title: 'For nobody', assignee: 'nobody' };
    const elicited = await elicitConnection(stack, tokens['mallory']!, 'test_open_assigned_issue', args);
    await connect('mallory', elicited.url);
    const before = toRepos().length;
    const answered = await retryConnection(
      stack,
      tokens['mallory']!,
      'test_open_assigned_issue',
      args,
      elicited.requestState,
      'accept',
    );
    expect(answered.json.result).toMatchObject({
      isError: true,
      structuredContent: { error: 'provider_refused', httpStatus: 422 },
    });
    expect(text(answered)).toBe(
      'GitHub (development) refused to run test_open_assigned_issue (HTTP 422: Validation Failed).',
    );
    const [post, ...more] = toRepos().slice(before);
    expect(more).toEqual([]);
    const [receipt] = await query(
      "SELECT r.id FROM operation_receipts r JOIN elicitation_navigations n ON n.id = r.navigation_id WHERE n.tool = 'test_open_assigned_issue'",
    );
    expect(post!.headers.get('idempotency-key')).toBe(receipt.id);
  });

  it.each([
    ['../', { owner: 'alice', repo: '../../orgs' }],
    ['..', { owner: 'alice', repo: '..' }],
    ['%2e%2e', { owner: 'alice', repo: '%2e%2e' }],
    ['%2f', { owner: 'alice%2fevil', repo: 'demo' }],
    ['//evil', { owner: '//evil.example', repo: 'demo' }],
    ['@evil', { owner: '@evil.example', repo: 'demo' }],
    ['http:', { owner: 'http:', repo: 'demo' }],
    ['CR/LF', { owner: 'alice', repo: 'demo\r\nHost: evil.example' }],
    ['NUL', { owner: 'alice', repo: 'demo\u0000' }],
    ['a 900 kB string', { owner: 'alice', repo: 'd'.repeat(900 * 1024) }],
  ])('refuses %s in a path variable over MCP and sends nothing', async (_what, hostile) => {
    const before = sent.length;
    const navigations = await query('SELECT count(*)::int AS n FROM elicitation_navigations');
    const response = await callTool(
      stack,
      tokens['alice']!,
      'test_issue_by_path',
      { ...hostile, number: issueNumber },
      {},
      {},
    );
    expect(response.json.result).toMatchObject({ isError: true, structuredContent: { error: 'invalid_input' } });
    expect(text(response)).toMatch(
      /^Invalid arguments for test_issue_by_path(\. (owner|repo): |: strings must not contain NUL)/,
    );
    expect(sent.slice(before)).toEqual([]);
    expect(await query('SELECT count(*)::int AS n FROM elicitation_navigations')).toEqual(navigations);
  });

  it('refuses a 2 MB argument at the MCP endpoint, before any tool runs, and sends nothing', async () => {
    const before = sent.length;
    const response = await callTool(
      stack,
      tokens['alice']!,
      'test_issue_by_path',
      { owner: 'alice', repo: 'd'.repeat(2 * 1024 * 1024), number: 1 },
      {},
      {},
    );
    expect(response.status).toBe(413);
    expect(sent.slice(before)).toEqual([]);
  });

  it('sends a normal value through the same path, percent-encoded below the API base', async () => {
    const before = sent.length;
    const response = await callTool(
      stack,
      tokens['alice']!,
      'test_issue_by_path',
      { owner: 'alice', repo: 'no such repo?', number: issueNumber },
      {},
      {},
    );
    expect(text(response)).toBe('GitHub (development) refused to run test_issue_by_path (HTTP 404: Not Found).');
    expect(sent.slice(before).map((s) => s.url.href)).toEqual([
      `${stack.dev.github!.apiUrl}/repos/alice/no%20such%20repo%3F/issues/${issueNumber}`,
    ]);
  });
});

describe('a declared tool on the -32042 2025-11-25 lineage', () => {
  let stack: BrokerStack;
  beforeAll(async () => {
    const declared = await loadDeclaredTools({
      toolsFile: undefined,
      dev: true,
      fileProviders: [],
      builtIn: tools,
      modules: [],
    });
    stack = await startBrokerStack({ extraTools: declared, legacyUrlElicitation: 'error', legacyWaitMs: 2_000 });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('answers -32042, then comments once on the retry after the browser completes, with the official SDK client', async () => {
    // An issue to comment on, opened by alice on 2026-07-28.
    const alice = await tokenFor(stack, 'alice');
    const issueArgs = { repository: 'alice/demo', title: 'For the legacy comment' };
    const asked = await elicitConnection(stack, alice, 'github_create_issue', issueArgs);
    await consentAndAuthorize(stack, await openConnectLink(stack, asked.url, 'alice'), 'alice', 'Allow', GITHUB_FORMS);
    const opened = await retryConnection(stack, alice, 'github_create_issue', issueArgs, asked.requestState, 'accept');
    const number = (opened.json.result?.['structuredContent'] as { issue: { number: number } }).issue.number;

    const legacy = await connectLegacy(stack, await tokenFor(stack, 'bob'), {});
    try {
      const args = { owner: 'alice', repo: 'demo', number, body: 'From 2025-11-25.' };
      const failure = await legacy.client.callTool({ name: 'github_comment_issue', arguments: args }).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(failure).toBeInstanceOf(UrlElicitationRequiredError);
      const [elicitation] = (failure as UrlElicitationRequiredError).elicitations;
      await consentAndAuthorize(
        stack,
        await openConnectLink(stack, elicitation!.url, 'bob'),
        'bob',
        'Allow',
        GITHUB_FORMS,
      );
      await until('notifications/elicitation/complete', () => (legacy.completed.length > 0 ? true : undefined));
      const retried = await legacy.client.callTool({ name: 'github_comment_issue', arguments: args });
      expect(retried.isError ?? false).toBe(false);
      expect(retried.structuredContent).toMatchObject({ author: 'bob' });
    } finally {
      await closeLegacy(legacy);
    }
    const rows = (
      await stack.db.pool.query(
        "SELECT r.lineage, r.outcome_status FROM operation_receipts r JOIN elicitation_navigations n ON n.id = r.navigation_id WHERE n.tool = 'github_comment_issue'",
      )
    ).rows;
    expect(rows).toEqual([{ lineage: 'error_retry', outcome_status: 'succeeded' }]);
    const github = stack.dev.github!;
    const token = await devGithubToken(github, stack.fetch, 'alice');
    const read = (await (
      await stack.fetch(`${github.apiUrl}/repos/alice/demo/issues/${number}`, {
        headers: { authorization: `Bearer ${token}` },
      })
    ).json()) as { comments: number };
    expect(read.comments).toBe(1);
    expect(internalErrors(stack)).toEqual([]);
  });
});
