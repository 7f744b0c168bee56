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

/** Distinct free loopback ports (held open together so no two are the same). */
export async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<ReturnType<typeof createServer>>((resolve) => {
          const server = createServer();
          server.listen(0, '127.0.0.1', () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as { port: number }).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
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
