import { describe, expect, it } from 'vitest';
import { operatorCli } from '../support/operatorCli.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// `broker upstreams` as a separate process against a stack that runs the development upstream MCP
// server as npm start does (no PROVIDERS_FILE): the CLI sees what the running broker serves, the
// development default applied as start-up applies it (src/cli/deployment.ts).

describe('broker upstreams under npm start', () => {
  const { stack } = useBrokerStack({ devUpstream: true }, { users: [] });
  const jsonLine = (output: string) => JSON.parse(output.split('\n').find((l) => l.startsWith('['))!) as unknown;

  it('lists the development upstream memo, at the port the running stack serves it on', async () => {
    const cli = await operatorCli(stack, 'ops', { command: 'upstreams' });
    const listed = await cli('list', '--json');
    expect(listed.code, listed.output).toBe(0);
    expect(jsonLine(listed.output)).toEqual([
      { id: 'memo', prefix: 'memo', url: stack.dev.upstream!.url, registration: 'auto', snapshot: null },
    ]);
    const table = await cli('list');
    expect(table.output).toMatch(/^memo +memo +https:\/\/\S+\/mcp +auto +\(none\)$/m);
  });

  it('checks it as its first connection would, over the network', async () => {
    const checked = await (await operatorCli(stack, 'ops', { command: 'upstreams' }))('check', '--json');
    expect(checked.code, checked.output).toBe(0);
    expect(jsonLine(checked.output)).toEqual([
      expect.objectContaining({ id: 'memo', ok: true, result: expect.stringContaining('ok: authorization server') }),
    ]);
  });

  it('where the development upstream does not run (its port 0), there is none', async () => {
    const cli = await operatorCli(stack, 'ops', { command: 'upstreams', env: { DEV_UPSTREAM_PORT: '0' } });
    const listed = await cli('list');
    expect(listed.code).toBe(0);
    expect(listed.output).toContain('No upstream MCP servers (kind: mcp) in PROVIDERS_FILE, and no development one.');
  });
});
