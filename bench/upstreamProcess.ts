import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { TlsMaterial } from '../src/tls/localCa.js';

// The development upstream MCP server (memo, src/dev/devUpstream.ts) and its authorization server in
// a process of their own, as a remote MCP server is to a deployed broker: on the same event loop, the
// broker and the upstream would wait for each other's work, which no deployment does.

export interface UpstreamProcess {
  url: string;
  issuer: string;
  /** The process's CPU time so far (user + system, all threads). */
  cpuUsage(): Promise<NodeJS.CpuUsage>;
  close(): Promise<void>;
}

type Reply = { url: string; issuer: string } | { cpu: NodeJS.CpuUsage } | { error: string };

const childPath = fileURLToPath(new URL('./upstreamChild.ts', import.meta.url));

export async function startUpstreamProcess(tls: TlsMaterial, brokerUrl: string): Promise<UpstreamProcess> {
  // The parent's execArgv carries tsx's loader, so the child runs the .ts file too.
  const child = fork(childPath, [], { execArgv: process.execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const next = () =>
    new Promise<Reply>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`memo's process ended (exit ${code})`));
      child.once('exit', onExit);
      child.once('message', (reply: Reply) => {
        child.off('exit', onExit);
        resolve(reply);
      });
    });
  const started = next();
  child.send({ tls, brokerUrl });
  const facts = await started;
  if ('error' in facts) throw new Error(`memo did not start: ${facts.error}`);
  if (!('url' in facts)) throw new Error('memo answered out of turn');
  return {
    url: facts.url,
    issuer: facts.issuer,
    async cpuUsage() {
      const reply = next();
      child.send('cpu');
      const answer = await reply;
      if (!('cpu' in answer)) throw new Error('memo did not report its CPU time');
      return answer.cpu;
    },
    close: () => stop(child),
  };
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}
