import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBrokerStack, type BrokerStack } from '../../support/brokerStack.js';
import { tokenFor } from '../../support/mcpWire.js';

// mcp-remote, the stdio bridge desktop hosts run for remote servers, as its own
// process: the host speaks JSON-RPC on its stdin and stdout, it speaks
// Streamable HTTP to the broker with a bearer token. It opens two 2025-11-25
// sessions per start (a probe and the bridged one), each with a GET stream, and
// never ends them with DELETE: a host closes its stdin (or kills it) on quit.

const PROXY = join(dirname(createRequire(import.meta.url).resolve('mcp-remote/package.json')), 'dist', 'proxy.js');
const NOTES_TOOLS = ['notes_create', 'notes_delete', 'notes_list', 'notes_workspaces'];

interface Reply {
  id: number;
  result?: { protocolVersion?: string; tools?: { name: string }[] };
  error?: { code: number; message: string };
}

interface Bridge {
  /** Sends a request on stdin and resolves with the reply of the same id on stdout. */
  request(id: number, method: string, params: object): Promise<Reply>;
  notify(method: string): void;
  /** What a host does on quit: close stdin, then wait for the bridge to exit. */
  quit(): Promise<void>;
  stderr(): string;
}

function startBridge(stack: BrokerStack, token: string, configDir: string): Bridge {
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [PROXY, `${stack.brokerUrl}/mcp`, '--header', `Authorization: Bearer ${token}`], {
    // The bridge's Node must trust the stack's CA; its OAuth state goes to a folder of this test.
    env: { ...process.env, NODE_EXTRA_CA_CERTS: join(stack.dataDir, 'tls', 'ca.pem'), MCP_REMOTE_CONFIG_DIR: configDir },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const waiting = new Map<number, (reply: Reply) => void>();
  const exited = once(child, 'exit');
  createInterface({ input: child.stdout }).on('line', (line) => {
    const reply = JSON.parse(line) as Reply;
    waiting.get(reply.id)?.(reply);
  });
  const write = (message: object) => child.stdin.write(`${JSON.stringify(message)}\n`);
  return {
    request(id, method, params) {
      const reply = new Promise<Reply>((resolve, reject) => {
        waiting.set(id, resolve);
        void exited.then(() => reject(new Error(`mcp-remote exited before answering ${method}:\n${stderr}`)));
      });
      write({ jsonrpc: '2.0', id, method, params });
      return reply;
    },
    notify: (method) => write({ jsonrpc: '2.0', method }),
    async quit() {
      child.stdin.end();
      await exited;
    },
    stderr: () => stderr,
  };
}

/** A host's first exchange through the bridge: initialize, initialized, tools/list. */
async function listToolsThrough(bridge: Bridge): Promise<[Reply, Reply]> {
  const initialized = await bridge.request(1, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'example-desktop-host', version: '1.0.0' } });
  bridge.notify('notifications/initialized');
  return [initialized, await bridge.request(2, 'tools/list', {})];
}

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
    const bridge = startBridge(stack, alice, configDir);
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
      const bridge = startBridge(stack, alice, configDir);
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
    const running = startBridge(stack, alice, configDir);
    try {
      await listToolsThrough(running);
      const second = startBridge(stack, alice, configDir);
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
