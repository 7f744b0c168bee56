import { UrlElicitationRequiredError } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { loadToolModules, ToolModuleError, toolScopeProblems } from '../../src/mcp/tools/toolModules.js';
import { tools } from '../../src/mcp/tools/registry.js';
import type { ConnectionTool } from '../../src/mcp/defineConnectionTool.js';
import { consentAndAuthorize, elicitConnection, openConnectLink, retryConnection } from '../support/connectFlow.js';
import { reportsAt } from '../support/forgedTokens.js';
import { closeLegacy, connectLegacy, internalErrors, until } from '../support/legacySdkClient.js';
import { callTool } from '../support/mcpWire.js';
import type { BrowserResponse } from '../support/testBrowser.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// A connection tool loaded from an operator's module (TOOL_MODULES), defined
// once with defineConnectionTool, on every era and lineage: MRTR, nested, -32042.

const MODULE = 'test/support/toolModules/reportsCount.ts';
const ARGS = { titleContains: '' };

describe('TOOL_MODULES', () => {
  it('refuses, listing every problem: a module that cannot be imported, one without tools, a name already taken', async () => {
    const error = await loadToolModules(
      ['test/support/toolModules/missing.ts', 'test/support/toolModules/noTools.ts', MODULE, MODULE],
      tools,
    ).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ToolModuleError);
    expect((error as ToolModuleError).problems).toEqual([
      expect.stringMatching(/^test\/support\/toolModules\/missing\.ts: cannot be imported/),
      'test/support/toolModules/noTools.ts: exports no tool made with defineConnectionTool',
      `${MODULE}: the tool name reports_count is already taken`,
    ]);
  });

  it('names each tool whose scopes its provider entry does not ask for (every connection would lack them)', async () => {
    const served = [...tools, ...(await loadToolModules([MODULE], tools))];
    expect(toolScopeProblems(served, [{ id: 'reports', scopes: ['openid', 'reports:read', 'reports:write'] }])).toEqual(
      [],
    );
    expect(toolScopeProblems(served, [{ id: 'reports', scopes: ['openid', 'reports:write'] }])).toEqual([
      'reports_list needs the scopes reports:read of reports, which its provider entry does not ask for',
      'reports_count needs the scopes reports:read of reports, which its provider entry does not ask for',
    ]);
    expect(toolScopeProblems(served, [])).toEqual([]);
  });
});

async function countTool(): Promise<ConnectionTool[]> {
  const loaded = await loadToolModules([MODULE], tools);
  expect(loaded.map((t) => t.name)).toEqual(['reports_count']);
  return loaded;
}

describe('a tool from a module on 2026-07-28 and on the nested 2025-11-25 lineage', () => {
  const { stack, tokens } = useBrokerStack(async () => ({ extraTools: await countTool(), legacyWaitMs: 15_000 }), {
    users: ['alice', 'bob'],
  });

  afterEach(() => {
    expect(internalErrors(stack), 'the broker logged no internal error').toEqual([]);
  });
  const receipts = async (sub: string) =>
    (
      await stack.db.pool.query(
        'SELECT n.tool, r.lineage, r.outcome_status FROM operation_receipts r JOIN elicitation_navigations n ON n.id = r.navigation_id WHERE n.subject_sub = $1',
        [sub],
      )
    ).rows;

  it('asks to connect through MRTR, then answers the retry once the user connected', async () => {
    const elicited = await elicitConnection(stack, tokens.alice, 'reports_count', ARGS);
    expect(elicited.message).toContain('count your reports');
    await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, 'alice'), 'alice');
    const accepted = await retryConnection(stack, tokens.alice, 'reports_count', ARGS, elicited.requestState, 'accept');
    const expected = (await reportsAt(stack, 'rs-user-alice')).length;
    expect(accepted.json.result).toMatchObject({ resultType: 'complete', structuredContent: { count: expected } });
    expect(await receipts('alice')).toEqual([{ tool: 'reports_count', lineage: 'mrtr', outcome_status: 'succeeded' }]);
    // Connected now: a direct call, no elicitation.
    const direct = await callTool(stack, tokens.alice, 'reports_count', ARGS, {}, {});
    expect(direct.json.result).toMatchObject({ resultType: 'complete', structuredContent: { count: expected } });
  });

  it('connects through the nested elicitation with the official 2025-11-25 SDK client', async () => {
    let browser: Promise<BrowserResponse> | undefined;
    const legacy = await connectLegacy(stack, tokens.bob, {
      url: (params) => {
        browser = openConnectLink(stack, params.url, 'bob').then((run) => consentAndAuthorize(stack, run, 'bob'));
        return { action: 'accept' };
      },
    });
    try {
      const { tools: listed } = await legacy.client.listTools();
      expect(listed.map((t) => t.name)).toEqual([
        'github_create_issue',
        'github_list_issues',
        'notes_create',
        'notes_delete',
        'notes_list',
        'notes_workspaces',
        'reports_count',
        'reports_create',
        'reports_list',
      ]);
      const result = await legacy.client.callTool({ name: 'reports_count', arguments: ARGS });
      await browser;
      expect(result.isError ?? false).toBe(false);
      expect(result.structuredContent).toEqual({ count: (await reportsAt(stack, 'rs-user-bob')).length });
      expect(legacy.urlAsks).toHaveLength(1);
      expect(legacy.completed).toEqual([legacy.urlAsks[0]!.elicitationId]);
      expect(await receipts('bob')).toEqual([
        { tool: 'reports_count', lineage: 'nested', outcome_status: 'succeeded' },
      ]);
      expect(legacy.errors).toEqual([]);
    } finally {
      await closeLegacy(legacy);
    }
  });
});

describe('a tool from a module on the -32042 2025-11-25 lineage', () => {
  const { stack, tokens } = useBrokerStack(
    async () => ({ extraTools: await countTool(), legacyUrlElicitation: 'error', legacyWaitMs: 2_000 }),
    { users: ['alice'] },
  );

  it('answers -32042, then the retry after the browser completes, with the official SDK client', async () => {
    const legacy = await connectLegacy(stack, tokens.alice, {});
    try {
      const failure = await legacy.client.callTool({ name: 'reports_count', arguments: ARGS }).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(failure).toBeInstanceOf(UrlElicitationRequiredError);
      const [elicitation] = (failure as UrlElicitationRequiredError).elicitations;
      await consentAndAuthorize(stack, await openConnectLink(stack, elicitation!.url, 'alice'), 'alice');
      await until('notifications/elicitation/complete', () => (legacy.completed.length > 0 ? true : undefined));
      const retried = await legacy.client.callTool({ name: 'reports_count', arguments: ARGS });
      expect(retried.isError ?? false).toBe(false);
      expect(retried.structuredContent).toEqual({ count: (await reportsAt(stack, 'rs-user-alice')).length });
      const rows = (await stack.db.pool.query('SELECT lineage, outcome_status FROM operation_receipts')).rows;
      expect(rows).toEqual([{ lineage: 'error_retry', outcome_status: 'succeeded' }]);
      expect(internalErrors(stack)).toEqual([]);
    } finally {
      await closeLegacy(legacy);
    }
  });
});
