import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import type { BrokerStack } from './brokerStack.js';

// mcp-remote, the stdio bridge desktop hosts run for remote servers, as its own
// process: the host speaks JSON-RPC on its stdin and stdout, the bridge speaks
// Streamable HTTP to the broker, with a bearer token or after its own OAuth in
// the browser it opens.

const PROXY = join(dirname(createRequire(import.meta.url).resolve('mcp-remote/package.json')), 'dist', 'proxy.js');

export interface Reply {
  id: number;
  result?: { protocolVersion?: string; tools?: { name: string }[] };
  error?: { code: number; message: string };
}

export interface Bridge {
  /** Sends a request on stdin and resolves with the reply of the same id on stdout. */
  request(id: number, method: string, params: object): Promise<Reply>;
  notify(method: string): void;
  /** What a host does on quit: close stdin, then wait for the bridge to exit. */
  quit(): Promise<void>;
  stderr(): string;
  /** The authorization URL the bridge asks the user to open (it prints it on stderr). */
  authorizationUrl: Promise<string>;
}

export interface BridgeOptions {
  /** Where the bridge keeps its OAuth state (MCP_REMOTE_CONFIG_DIR): a folder of the test. */
  configDir: string;
  /** A bearer token sent as the Authorization header; without one the bridge does its own OAuth. */
  token?: string;
  /** The MCP endpoint it is given (default: the stack's first instance). */
  url?: string;
}

export function startBridge(
  stack: BrokerStack,
  { configDir, token, url = `${stack.brokerUrl}/mcp` }: BridgeOptions,
): Bridge {
  const child: ChildProcessWithoutNullStreams = spawn(
    process.execPath,
    [PROXY, url, ...(token ? ['--header', `Authorization: Bearer ${token}`] : [])],
    {
      // The bridge's Node must trust the stack's CA. It opens the authorization URL through the `open`
      // package, whose xdg-open runs $BROWSER: here a no-op, the test drives Chromium to the URL itself.
      env: {
        ...process.env,
        NODE_EXTRA_CA_CERTS: join(stack.dataDir, 'tls', 'ca.pem'),
        MCP_REMOTE_CONFIG_DIR: configDir,
        BROWSER: 'true',
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  let stderr = '';
  let authorize: (url: string) => void = () => undefined;
  const authorizationUrl = new Promise<string>((resolve) => (authorize = resolve));
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
    const url = /Please authorize this client by visiting:\n(\S+)/.exec(stderr)?.[1];
    if (url) authorize(url);
  });
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
    authorizationUrl,
  };
}

/** A host's first exchange through the bridge: initialize, initialized, tools/list. */
export async function listToolsThrough(bridge: Bridge): Promise<[Reply, Reply]> {
  const initialized = await bridge.request(1, 'initialize', {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'example-desktop-host', version: '1.0.0' },
  });
  bridge.notify('notifications/initialized');
  return [initialized, await bridge.request(2, 'tools/list', {})];
}
