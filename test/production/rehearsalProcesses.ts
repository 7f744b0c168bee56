import { join } from 'node:path';
import { runCommand, runTs, type BrokerProcess } from '../support/brokerProcess.js';
import { HOSTNAMES_PRELOAD } from './rehearsalHosts.js';

// The rehearsal's processes. The built broker and its CLI run with plain node from the built folder
// (no tsx, nothing of the development stack), the names preload (hostnames.mjs) their only addition;
// the identity provider, the provider emulator and the upstream server are test code run through tsx.

const here = (file: string) => join('test', 'production', file);

/** A test-side server (idpServer.ts, githubEmulator.ts, upstreamServer.ts) with its settings, once it says READY. */
export async function startService(file: string, settings: object): Promise<BrokerProcess> {
  const child = runTs(here(file), [JSON.stringify(settings)], {});
  await child.waitFor('READY', 30_000).catch((err: unknown) => {
    child.child.kill('SIGKILL');
    throw new Error(`${file} did not start: ${(err as Error).message}`);
  });
  return child;
}

export async function stopService(child: BrokerProcess | undefined): Promise<void> {
  if (!child || child.child.exitCode !== null || child.child.signalCode !== null) return;
  child.child.kill('SIGTERM');
  const killer = setTimeout(() => child.child.kill('SIGKILL'), 5_000);
  await child.exited;
  clearTimeout(killer);
}

/** `node dist/main.js` in the built folder, as the image's CMD runs it. */
export function startBroker(imageDir: string, env: Record<string, string>): BrokerProcess {
  return runCommand(process.execPath, ['--import', HOSTNAMES_PRELOAD, 'dist/main.js'], env, { cwd: imageDir });
}

/** `bin/broker.js <args>` in the built folder (the image's `broker` command); its exit code and output. */
export async function brokerCli(
  imageDir: string,
  env: Record<string, string>,
  args: string[],
): Promise<{ code: number | null; output: string }> {
  const run = runCommand(process.execPath, ['--import', HOSTNAMES_PRELOAD, 'bin/broker.js', ...args], env, {
    cwd: imageDir,
  });
  const { code } = await run.exited;
  return { code, output: run.output() };
}
