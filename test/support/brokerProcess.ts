import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

export interface BrokerProcess {
  child: ChildProcess;
  output(): string;
  /** Resolves with the exit code (or signal) once the process has ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  waitFor(text: string, timeoutMs?: number): Promise<void>;
}

export interface RunOptions {
  /** The checkout to run in (default: this one). */
  cwd?: string;
  /** Its own process group (pgid = pid), as a terminal's foreground job: signal it with process.kill(-pid). */
  detached?: boolean;
}

/** Runs a TypeScript entry point of the repo (src/main.ts, src/cli/broker.ts) in its own Node process. */
export function runTs(
  entry: string,
  args: string[],
  env: Record<string, string>,
  options: RunOptions = {},
): BrokerProcess {
  return runCommand(process.execPath, ['--import', 'tsx', entry, ...args], env, options);
}

/** Runs `npm <args>` (npm start: npm → sh → tsx → node, the tree a terminal's Ctrl-C reaches). */
export function runNpm(args: string[], env: Record<string, string>, options: RunOptions = {}): BrokerProcess {
  return runCommand('npm', args, env, options);
}

/** Runs `command` with `env` (PATH and HOME beside), its output kept. */
export function runCommand(
  command: string,
  args: string[],
  env: Record<string, string>,
  options: RunOptions = {},
): BrokerProcess {
  const child = spawn(command, args, {
    cwd: options.cwd ?? repoRoot,
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? false,
  });
  let text = '';
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    text += chunk.toString('utf8');
    for (const listener of listeners) listener();
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return {
    child,
    output: () => text,
    exited,
    waitFor(needle, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (text.includes(needle)) {
            done();
            resolve();
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`timed out waiting for "${needle}"; output so far:\n${text}`));
        }, timeoutMs);
        const ended = () => {
          done();
          reject(new Error(`process ended before "${needle}"; output:\n${text}`));
        };
        const done = () => {
          clearTimeout(timer);
          listeners.delete(check);
          child.off('exit', ended);
        };
        listeners.add(check);
        child.once('exit', ended);
        check();
      });
    },
  };
}

/**
 * Distinct free loopback ports (held open together so no two are the same), chosen below the kernel's
 * ephemeral range: a port from that range can be taken by any outgoing connection on the machine (a soak
 * beside the crash suite opens thousands) between a killed broker and its restart on the same port.
 */
export async function freePorts(count: number): Promise<number[]> {
  const ceiling = Math.min(await ephemeralLow(), 65_536);
  const floor = 10_000;
  const held: ReturnType<typeof createServer>[] = [];
  const ports = new Set<number>();
  for (let tries = 0; ports.size < count; tries++) {
    if (tries > 1_000) throw new Error(`no ${count} free ports between ${floor} and ${ceiling}`);
    const port = floor + Math.floor(Math.random() * (ceiling - floor));
    if (ports.has(port)) continue;
    const server = await listenOn(port);
    if (!server) continue;
    held.push(server);
    ports.add(port);
  }
  await Promise.all(held.map((s) => new Promise((r) => s.close(r))));
  return [...ports];
}

/** Free ports for a broker process and its development servers, as the environment names them. */
export async function devStackPorts(): Promise<{
  PORT: string;
  DEV_IDP_PORT: string;
  DEV_REPORTS_PORT: string;
  DEV_GITHUB_PORT: string;
  DEV_UPSTREAM_PORT: string;
}> {
  const [port, idp, reports, github, upstream] = (await freePorts(5)).map(String) as [
    string,
    string,
    string,
    string,
    string,
  ];
  return {
    PORT: port,
    DEV_IDP_PORT: idp,
    DEV_REPORTS_PORT: reports,
    DEV_GITHUB_PORT: github,
    DEV_UPSTREAM_PORT: upstream,
  };
}

/** The first port of the kernel's ephemeral range (Linux; IANA's 49152 where it cannot be read). */
async function ephemeralLow(): Promise<number> {
  const { readFile } = await import('node:fs/promises');
  const text = await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').catch(() => '49152');
  const low = Number(text.trim().split(/\s+/)[0]);
  return Number.isInteger(low) && low > 11_000 ? low : 49_152;
}

function listenOn(port: number): Promise<ReturnType<typeof createServer> | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

/** True when nothing accepts connections on 127.0.0.1:port. */
export async function isPortClosed(port: number): Promise<boolean> {
  const { connect } = await import('node:net');
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}
