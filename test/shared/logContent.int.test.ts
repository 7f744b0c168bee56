import { describe, expect, it } from 'vitest';
import { randomToken } from '../../src/shared/tokens.js';
import { elicitConnection } from '../support/connectFlow.js';
import { callTool, mcpPost, meta } from '../support/mcpWire.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// What the broker's info, warn and error lines may carry: codes, ids, tools
// and route templates. Personal data (note titles, workspace URIs, report
// titles) and connect handles (bearer-like secrets in a path) stay out, and
// the JSON-RPC code of a refused request is readable, not censored.

interface Line {
  level: number;
  msg: string;
  [key: string]: unknown;
}

describe('log lines carry codes and route templates, never personal data or connect handles', () => {
  const { stack, tokens } = useBrokerStack({}, { users: ['alice'] });
  const ALICE_WS = 'file:///work/notes/alice';

  const linesSince = (from: number): Line[] =>
    stack.logs
      .slice(from)
      .map((l) => JSON.parse(l) as Line)
      .filter((l) => l.level >= 30);

  it('logs the JSON-RPC code of a refused MCP request under rpcCode', async () => {
    const from = stack.logs.length;
    const refused = await mcpPost(
      stack,
      { jsonrpc: '2.0', id: 7, method: 'no/such-method', params: { _meta: meta() } },
      { token: tokens.alice },
    );
    expect(refused.json.error?.code).toBe(-32601);
    const line = linesSince(from).find((l) => l.msg === 'MCP request refused');
    expect(line).toMatchObject({ rpcCode: -32601 });
    expect(JSON.stringify(line)).not.toContain('[redacted]');
  });

  it('keeps note titles and workspace URIs out of the log while the notes tools work and refuse', async () => {
    const from = stack.logs.length;
    const title = `CANARY-TITLE-${randomToken()}`;
    const missing = `CANARY-MISSING-${randomToken()}`;
    const otherWorkspace = `file:///work/notes/CANARY-WS-${randomToken()}`;

    const created = await callTool(stack, tokens.alice, 'notes_create', {
      workspaceUri: ALICE_WS,
      title,
      body: 'CANARY-BODY',
    });
    expect(created.json.result).toMatchObject({ resultType: 'complete' });
    expect(created.json.result?.['isError']).not.toBe(true);
    const notFound = await callTool(stack, tokens.alice, 'notes_delete', { workspaceUri: ALICE_WS, title: missing });
    expect(notFound.text).toContain(missing);
    const forbidden = await callTool(stack, tokens.alice, 'notes_list', { workspaceUri: otherWorkspace });
    expect(forbidden.text).toContain('CANARY-WS-');

    const lines = linesSince(from);
    expect(lines.filter((l) => l.msg === 'tool refused the call').map((l) => [l['tool'], l['error']])).toEqual([
      ['notes_delete', 'not_found'],
      ['notes_list', 'forbidden'],
    ]);
    const text = lines.map((l) => JSON.stringify(l)).join('\n');
    for (const canary of [title, missing, 'CANARY-WS-', 'CANARY-BODY', ALICE_WS]) expect(text).not.toContain(canary);
  });

  it('logs the route template, not the connect handle, when a connect page fails', async () => {
    const reportTitle = `CANARY-REPORT-${randomToken()}`;
    const elicited = await elicitConnection(stack, tokens.alice, 'reports_create', { title: reportTitle, body: 'x' });
    const handle = new URL(elicited.url).pathname.split('/').pop()!;
    const from = stack.logs.length;
    // A real internal failure on the page: the navigations table is gone for a moment.
    await stack.db.pool.query('ALTER TABLE elicitation_navigations RENAME TO navigations_away');
    try {
      const page = await stack.fetch(elicited.url);
      expect(page.status).toBe(500);
      expect(await page.text()).not.toContain(handle);
    } finally {
      await stack.db.pool.query('ALTER TABLE navigations_away RENAME TO elicitation_navigations');
    }
    const lines = linesSince(from);
    expect(lines.find((l) => l.msg === 'request failed')).toMatchObject({
      level: 50,
      method: 'GET',
      route: '/connect/:handle',
    });
    const text = lines.map((l) => JSON.stringify(l)).join('\n');
    expect(text).not.toContain(handle);
    expect(stack.logs.join('\n')).not.toContain(reportTitle);
    // The link still works once the table is back.
    expect((await stack.fetch(elicited.url)).status).toBe(200);
  });
});
