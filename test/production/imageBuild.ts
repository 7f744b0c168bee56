import { spawn } from 'node:child_process';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { repoRoot } from '../support/brokerProcess.js';

// The broker built as the image builds it (Dockerfile, target production), in a folder of its own:
// scripts/imageBuild.mjs (`npm run image:build -- <dir> --target production`) performs the
// Dockerfile's steps; without it, the same steps by hand on the committed tree (git archive HEAD, as
// CI's clone has it): the build stage's inputs, `npm run build`, `npm prune --omit=dev`, then the
// final stage's files. The rehearsal runs only what this folder holds.

/**
 * Builds the image's production target under `dir` from `source` (a checkout: REHEARSAL_SOURCE, e.g.
 * a worktree of an older commit, else this one); returns the folder its CMD runs in (WORKDIR /app).
 */
export async function buildImage(dir: string, source = process.env['REHEARSAL_SOURCE'] ?? repoRoot): Promise<string> {
  await rm(dir, { recursive: true, force: true });
  if (await tracked('scripts/imageBuild.mjs', source)) {
    const output = await run('npm', ['run', '-s', 'image:build', '--', dir, '--target', 'production'], source);
    return output.trim().split('\n').at(-1) ?? '';
  }
  const build = `${dir}.build`;
  await rm(build, { recursive: true, force: true });
  await mkdir(build, { recursive: true });
  const stageInputs = ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'src'];
  const finalInputs = ['bin', 'migrations', 'views', 'public', 'config'];
  await run(
    'sh',
    ['-c', `git archive HEAD ${[...stageInputs, ...finalInputs].join(' ')} | tar -x -C "${build}"`],
    source,
  );
  // npm ci's result without the network: the installed tree, linked (prune only unlinks files).
  await run('cp', ['-al', join(repoRoot, 'node_modules'), join(build, 'node_modules')], repoRoot);
  await rm(join(build, 'node_modules', '.package-lock.json'), { force: true });
  await run('npm', ['run', '-s', 'build'], build);
  await run('npm', ['prune', '--omit=dev', '--no-audit', '--no-fund'], build);
  await mkdir(dir, { recursive: true });
  const finalFiles = ['node_modules', 'dist', 'package.json', ...finalInputs].map((path) => join(build, path));
  await run('mv', [...finalFiles, dir], repoRoot);
  await rm(build, { recursive: true, force: true });
  return dir;
}

/** Whether `path` is committed (the script may be mid-way in a shared checkout; CI's clone has what is). */
async function tracked(path: string, source: string): Promise<boolean> {
  return run('git', ['ls-files', '--error-unmatch', path], source).then(
    () => true,
    () => false,
  );
}

/** Runs a command to its end; resolves with its standard output, rejects with its output on failure. */
function run(command: string, args: string[], cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
      output += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0
        ? resolve(stdout)
        : reject(new Error(`${command} ${args.join(' ')} exited ${code}:\n${output.slice(-4000)}`)),
    );
  });
}
