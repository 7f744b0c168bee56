import { describe, expect, it } from 'vitest';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { consentAndAuthorize, elicitConnection, openConnectLink, retryConnection } from '../support/connectFlow.js';
import { callTool } from '../support/mcpWire.js';
import { createTestBrowser } from '../support/testBrowser.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// The dashboard's upstream MCP servers, as npm start runs the development one (memo): alice
// connects through a call that waits for the connect flow (an accepted operation), then calls
// it directly twice, once with arguments the upstream refuses. The page counts her connection,
// the accepted call from the receipts and this instance's calls and errors, under the strict CSP.

describe('the operator dashboard: upstream MCP servers', () => {
  const { stack, tokens } = useBrokerStack({ devUpstream: true }, { users: ['alice'] });
  const row = (html: string) => html.match(/<tr class="upstream" data-upstream="memo">([\s\S]*?)<\/tr>/)?.[1] ?? '';
  const cell = (html: string, name: string) =>
    row(html)
      .match(new RegExp(`<td class="${name}">([\\s\\S]*?)</td>`))?.[1]
      ?.replace(/<[^>]+>/g, '')
      .trim();

  it('shows connected users, accepted calls, and this instance’s calls and errors per upstream', async () => {
    const args = { text: 'ops canary memo' };
    const elicited = await elicitConnection(stack, tokens.alice, 'memo_save', args);
    const done = await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, 'alice'), 'alice');
    expect(done.status).toBe(200);
    await retryConnection(stack, tokens.alice, 'memo_save', args, elicited.requestState, 'accept');
    expect((await callTool(stack, tokens.alice, 'memo_list', {})).json['result']).toBeDefined();
    await callTool(stack, tokens.alice, 'memo_save', { text: '' });

    const ops = createTestBrowser({ fetch: stack.fetch });
    const form = await ops.get(`${stack.brokerUrl}/login?return_to=/ops`);
    const page = await ops.submitForm(form, { login: 'ops', password: DEV_PASSWORD });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy') ?? '').toContain("script-src 'none'");
    expect(page.text).not.toMatch(/<script\b|\sstyle=/i);
    expect(page.text).toContain('<h2>Upstream MCP servers</h2>');
    expect(page.text).toContain('counted in memory since it started at');
    expect(cell(page.text, 'users')).toBe('1');
    expect(cell(page.text, 'connections')).toBe('1');
    expect(cell(page.text, 'needs-reauth')).toBe('0');
    expect(cell(page.text, 'accepted')).toBe('1 done, 0 failed');
    // Every tools/call this instance sent: the accepted one, the list, the refused save.
    expect(cell(page.text, 'calls')).toBe('3');
    expect(cell(page.text, 'errors')).toMatch(/^1 \((tool error|upstream error) 1\)$/);
    expect(Number(cell(page.text, 'lists'))).toBeGreaterThanOrEqual(1);
    // What alice saved never reaches the operator's page.
    expect(page.text).not.toContain('ops canary memo');
  });
});
