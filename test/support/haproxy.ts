import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Fetch } from '../../src/shared/httpClient.js';
import type { TlsMaterial } from '../../src/tls/localCa.js';
import { repoRoot } from './brokerProcess.js';

// HAProxy (Debian's `haproxy`) with the configuration that ships in deploy/haproxy.cfg, on
// loopback: the deployment's values are environment variables the file names, so the test
// runs the very file an operator would, with its own ports and TLS files.

export const HAPROXY_BINARY = ['/usr/sbin/haproxy', '/usr/bin/haproxy', '/usr/local/sbin/haproxy'].find((path) =>
  existsSync(path),
);

export const SHIPPED_HAPROXY_CFG = join(repoRoot, 'deploy', 'haproxy.cfg');

/** The response header deploy/haproxy.cfg names the answering instance in. */
export const SERVED_BY = 'x-served-by';

export interface Balancer {
  url: string;
  output(): string;
  stop(): Promise<void>;
}

/** HAProxy on 127.0.0.1:port in front of `instances` (host:port each), serving `tls` as its certificate. */
export async function startHaproxy(options: {
  port: number;
  instances: readonly string[];
  tls: TlsMaterial;
  /** Where the combined PEM is written. */
  dir: string;
  /** A configuration file of deploy/ (default haproxy.cfg, TLS end to end; haproxy-tls-terminated.cfg speaks HTTP to the instances). */
  config?: string;
}): Promise<Balancer> {
  const config = options.config ?? SHIPPED_HAPROXY_CFG;
  if (!HAPROXY_BINARY) throw new Error('haproxy is not installed');
  const pem = join(options.dir, 'balancer.pem');
  const ca = join(options.dir, 'balancer-ca.pem');
  await writeFile(pem, `${options.tls.certPem.trim()}\n${options.tls.keyPem.trim()}\n`, { mode: 0o600 });
  await writeFile(ca, options.tls.caPem);
  const env: Record<string, string> = {
    PATH: process.env['PATH'] ?? '',
    BROKER_BIND: `127.0.0.1:${options.port}`,
    BROKER_TLS_PEM: pem,
    BROKER_CA_FILE: ca,
  };
  options.instances.forEach((address, i) => (env[`BROKER_${i + 1}`] = address));
  // -db: in the foreground, logging to stderr; -c first, so a broken file fails here with its reason.
  const check = await run(HAPROXY_BINARY, ['-c', '-f', config], env);
  if (check.code !== 0) throw new Error(`haproxy -c refused ${config}:\n${check.text}`);
  const child = spawn(HAPROXY_BINARY, ['-db', '-f', config], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    url: `https://127.0.0.1:${options.port}`,
    output: () => text,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(killer);
    },
  };
}

/** Until `count` instances have each answered /readyz through the balancer (its health checks see them up). */
export async function waitForServers(balancer: Balancer, fetch: Fetch, count: number): Promise<void> {
  const seen = new Set<string>();
  for (let i = 0; i < 300 && seen.size < count; i++) {
    const response = await fetch(`${balancer.url}/readyz`).catch(() => undefined);
    const server = response?.headers.get(SERVED_BY);
    if (response?.status === 200 && server) seen.add(server);
    await response?.body?.cancel().catch(() => undefined);
    if (seen.size < count) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  if (seen.size < count)
    throw new Error(`only ${[...seen].join(', ') || 'none'} answered through the balancer:\n${balancer.output()}`);
}

function run(command: string, args: string[], env: Record<string, string>): Promise<{ code: number; text: string }> {
  return new Promise((resolve) => {
    const child: ChildProcess = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    child.stdout?.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    child.stderr?.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    child.once('exit', (code) => resolve({ code: code ?? 1, text }));
  });
}
