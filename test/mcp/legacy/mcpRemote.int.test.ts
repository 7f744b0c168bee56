import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBrokerStack, type BrokerStack } from '../../support/brokerStack.js';
import { listToolsThrough, startBridge } from '../../support/mcpRemoteBridge.js';
import { tokenFor } from '../../support/mcpWire.js';

// mcp-remote (test/support/mcpRemoteBridge.ts) with a bearer token against the 2025-11-25 adapter.
// It opens two sessions per start (a probe and the bridged one), each with a GET stream, and
// never ends them with DELETE: a host closes its stdin (or kills it) on quit.

const NOTES_TOOLS = ['notes_create', 'notes_delete', 'notes_list', 'notes_workspaces'];

describe('mcp-remote as the host bridge', () => {
  let stack: BrokerStack;
  let alice: string;
  let configDir: string;

  beforeAll(async () => {
    // Two sessions per principal: one start of the bridge fills alice's cap.
    stack = await startBrokerStack({ legacyLimits: { maxSessionsPerPrincipal: 2 } });
    alice = await tokenFor(stack, 'alice');
    configDir = await mkdtemp(join(tmpdir(), 'mcp-remote-'));
  });
  afterAll(async () => {
    await stack?.close();
    if (configDir) await rm(configDir, { recursive: true, force: true });
  });

  it('bridges initialize and tools/list over stdio to the 2025-11-25 adapter with a bearer token', async () => {
    const bridge = startBridge(stack, { token: alice, configDir });
    try {
      const [initialized, listed] = await listToolsThrough(bridge);
      expect(initialized.result?.protocolVersion).toBe('2025-11-25');
      expect(listed.result?.tools?.map((t) => t.name)).toEqual(expect.arrayContaining(NOTES_TOOLS));
      expect(bridge.stderr()).not.toContain(alice);
    } finally {
      await bridge.quit();
    }
  });

  it('does not lock a user out when a bridge quits without ending its sessions: sessions whose client dropped its stream make room', async () => {
    // The first test's bridge left alice's two sessions open; each later start needs two more.
    for (let start = 0; start < 3; start++) {
      const bridge = startBridge(stack, { token: alice, configDir });
      try {
        const [initialized, listed] = await listToolsThrough(bridge);
        expect(initialized.error).toBeUndefined();
        expect(listed.result?.tools?.map((t) => t.name)).toEqual(expect.arrayContaining(NOTES_TOOLS));
      } finally {
        await bridge.quit();
      }
    }
  });

  it('still holds a user to the cap while the sessions are in use: a second bridge beside a running one is refused', async () => {
    const running = startBridge(stack, { token: alice, configDir });
    try {
      await listToolsThrough(running);
      const second = startBridge(stack, { token: alice, configDir });
      const refused = await listToolsThrough(second).then(
        () => undefined,
        (err: unknown) => err as Error,
      );
      expect(refused?.message).toContain('You have 2 open sessions, the most allowed');
      // The running bridge's sessions were not ended to make room.
      expect((await running.request(3, 'tools/list', {})).result?.tools?.map((t) => t.name)).toEqual(expect.arrayContaining(NOTES_TOOLS));
    } finally {
      await running.quit();
    }
  });
});
