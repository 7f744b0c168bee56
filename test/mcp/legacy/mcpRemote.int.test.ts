import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrokerStack } from '../../support/brokerStack.js';
import { listenHttps, type HttpsTestServer } from '../../support/httpsTestServer.js';
import { listToolsThrough, startBridge } from '../../support/mcpRemoteBridge.js';
import { useBrokerStack } from '../../support/useBrokerStack.js';

// mcp-remote (test/support/mcpRemoteBridge.ts) with a bearer token against the 2025-11-25 adapter.
// It opens two sessions per start (a probe and the bridged one), each with a GET stream, and
// never ends them with DELETE: a host closes its stdin (or kills it) on quit.

const NOTES_TOOLS = ['notes_create', 'notes_delete', 'notes_list', 'notes_workspaces'];

interface Tap {
  server: HttpsTestServer;
  /** Resolves once the broker has answered `count` GET streams in all (the bridge opens them on its own schedule). */
  streamsOpened(count: number): Promise<void>;
}

/**
 * A pass-through in front of the broker that sees the bridge's GET streams open. A stream the
 * bridge drops is dropped upstream too, so the broker sees what it would see directly.
 */
async function listenTap(stack: BrokerStack): Promise<Tap> {
  const server = await listenHttps(stack.tls);
  const target = new URL(stack.brokerUrl);
  let opened = 0;
  const waiters: { count: number; resolve: () => void }[] = [];
  server.setHandler((req, res) => {
    const upstream = request(
      {
        host: target.hostname,
        port: target.port,
        path: req.url,
        method: req.method,
        headers: { ...req.headers, host: target.host },
        ca: stack.tls.caPem,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        if (req.method !== 'GET' || answer.statusCode !== 200) return;
        opened++;
        for (const w of waiters.filter((w) => opened >= w.count)) w.resolve();
      },
    );
    // Destroying a request the bridge dropped makes it emit "socket hang up": that is the point, not a failure.
    upstream.on('error', () => res.destroy());
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  });
  return {
    server,
    streamsOpened: (count) =>
      new Promise<void>((resolve) => (opened >= count ? resolve() : waiters.push({ count, resolve }))),
  };
}

describe('mcp-remote as the host bridge', () => {
  const { stack, tokens } = useBrokerStack(
    { legacyLimits: { maxSessionsPerPrincipal: 2 } },
    { users: ['alice', 'bob', 'mallory'] },
  );
  // One principal per test: a session a bridge left without its stream ever opening is not made room from.
  let configDir: string;

  beforeAll(async () => {
    // Two sessions per principal: one start of the bridge fills a principal's cap.
    configDir = await mkdtemp(join(tmpdir(), 'mcp-remote-'));
  });
  afterAll(async () => {
    if (configDir) await rm(configDir, { recursive: true, force: true });
  });

  it('bridges initialize and tools/list over stdio to the 2025-11-25 adapter with a bearer token', async () => {
    const bridge = startBridge(stack, { token: tokens.alice, configDir });
    try {
      const [initialized, listed] = await listToolsThrough(bridge);
      expect(initialized.result?.protocolVersion).toBe('2025-11-25');
      expect(listed.result?.tools?.map((t) => t.name)).toEqual(expect.arrayContaining(NOTES_TOOLS));
      expect(bridge.stderr()).not.toContain(tokens.alice);
    } finally {
      await bridge.quit();
    }
  });

  it('does not lock a user out when a bridge quits without ending its sessions: sessions whose client dropped its stream make room', async () => {
    const tap = await listenTap(stack);
    try {
      // Each start fills bob's cap with two sessions and their streams, then quits as a host does.
      for (let start = 1; start <= 3; start++) {
        const bridge = startBridge(stack, { token: tokens.bob, configDir, url: `${tap.server.origin}/mcp` });
        try {
          const [initialized, listed] = await listToolsThrough(bridge);
          expect(initialized.error).toBeUndefined();
          expect(listed.result?.tools?.map((t) => t.name)).toEqual(expect.arrayContaining(NOTES_TOOLS));
          await tap.streamsOpened(2 * start);
        } finally {
          await bridge.quit();
        }
      }
    } finally {
      await tap.server.close();
    }
  });

  it('still holds a user to the cap while the sessions are in use: a second bridge beside a running one is refused', async () => {
    const running = startBridge(stack, { token: tokens.mallory, configDir });
    try {
      await listToolsThrough(running);
      const second = startBridge(stack, { token: tokens.mallory, configDir });
      const refused = await listToolsThrough(second).then(
        () => undefined,
        (err: unknown) => err as Error,
      );
      expect(refused?.message).toContain('You have 2 open sessions, the most allowed');
      // The running bridge's sessions were not ended to make room.
      expect((await running.request(3, 'tools/list', {})).result?.tools?.map((t) => t.name)).toEqual(
        expect.arrayContaining(NOTES_TOOLS),
      );
    } finally {
      await running.quit();
    }
  });
});
