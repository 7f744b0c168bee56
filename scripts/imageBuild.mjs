#!/usr/bin/env node
// `npm run image:build -- <dir> [--target <stage>] [--file <Dockerfile>] [--context <dir>]`
//
// Performs a Dockerfile target's build steps without Docker, so CI proves the steps the image takes.
// Each stage gets a root folder, <dir>/<stage>/, where its absolute paths land (WORKDIR /app is
// <dir>/<stage>/app). Only the stages the target needs are built, in file order:
//   FROM <image>       an empty root; this machine's node and npm stand in for the image's
//   FROM <stage>       a copy of that stage's root
//   WORKDIR, COPY      performed in the root (COPY --from=<stage> from that stage's root)
//   RUN                `sh -c` in WORKDIR's folder, with the stage's ENV, this machine's PATH, HOME
//                      (npm's cache, used first) and proxy settings; paths must be relative. `chown`
//                      is noted, not performed: the image's users need not exist here
//   ENV                set for the RUN steps after it and kept in the image's settings
//   USER, EXPOSE, HEALTHCHECK, CMD   noted in the image's settings (no RUN may follow USER)
// Any other instruction or form is refused (scripts/image/dockerfile.mjs). On success it writes the
// target's settings to <dir>/<target>.json and prints the folder of its WORKDIR (where CMD runs) as
// the last line of standard output; on any failure it exits non-zero.
import { spawn } from 'node:child_process';
import { chmod, cp, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join, posix, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DockerfileError, parseDockerfile } from './image/dockerfile.mjs';

// What RUN steps see of this machine: the tools, npm's cache and the way out to the registry.
const PASSED_ENV = ['PATH', 'HOME', 'TMPDIR', 'LANG', 'HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY'];
const PASSED_ENV_PATTERN = /^(http_proxy|https_proxy|no_proxy|npm_config_(registry|cache|userconfig))$/;

const CHOWN_NOTED = `#!/bin/sh
# scripts/imageBuild.mjs: ownership names the image's users, which this machine need not have.
owner=""
for arg in "$@"; do
  case "$arg" in
    -*) ;;
    *) if [ -z "$owner" ]; then owner="$arg"; elif [ ! -e "$arg" ]; then
         echo "chown: cannot access '$arg': No such file or directory" >&2; exit 1; fi ;;
  esac
done
echo "    chown $* (noted, not performed here)" >&2
`;

const log = (line) => process.stderr.write(`${line}\n`);

/** The stages `target` needs (its FROM chain and COPY --from sources), in file order. */
function neededStages(stages, target) {
  const byName = new Map(stages.map((s) => [s.name, s]));
  const needed = new Set();
  const visit = (name) => {
    const stage = byName.get(name);
    if (!stage || needed.has(name)) return;
    needed.add(name);
    if (byName.has(stage.base.toLowerCase())) visit(stage.base.toLowerCase());
    for (const step of stage.steps) if (step.from) visit(step.from.toLowerCase());
  };
  visit(target);
  return stages.filter((s) => needed.has(s.name));
}

function inside(root, containerPath) {
  return join(root, posix.resolve('/', containerPath));
}

async function copy(step, stage, state, roots, context) {
  const fromRoot = step.from === undefined ? undefined : roots.get(step.from.toLowerCase());
  if (step.from !== undefined && !fromRoot)
    throw new DockerfileError(
      `line ${step.line}: COPY --from=${step.from} names no earlier stage (an image is not fetched here)`,
    );
  const dest = posix.resolve(state.workdir, step.dest);
  const intoFolder = step.dest.endsWith('/') || step.sources.length > 1;
  for (const source of step.sources) {
    const from = fromRoot ? inside(fromRoot, source) : resolve(context, source);
    if (!fromRoot && (relative(context, from).startsWith('..') || isAbsolute(relative(context, from))))
      throw new DockerfileError(`line ${step.line}: COPY ${source} is outside the build context`);
    const info = await stat(from).catch(() => {
      throw new DockerfileError(
        `line ${step.line}: COPY ${source}: no such file in ${fromRoot ? step.from : 'the context'}`,
      );
    });
    const target = info.isFile() && intoFolder ? posix.join(dest, posix.basename(source)) : dest;
    // A folder's contents go into the destination; links stay as written (node_modules/.bin).
    await cp(from, inside(stage.root, target), { recursive: true, force: true, verbatimSymlinks: true });
  }
  if (step.chown) log(`    --chown=${step.chown} noted, not performed here`);
}

function run(command, cwd, env) {
  return new Promise((done, fail) => {
    const child = spawn('sh', ['-c', command], { cwd, env, stdio: ['ignore', process.stderr, process.stderr] });
    child.once('error', fail);
    child.once('exit', (code, signal) =>
      code === 0 ? done() : fail(new Error(`RUN ${command} failed (${signal ?? `exit ${code}`})`)),
    );
  });
}

async function buildStage(stage, roots, ctx) {
  stage.root = join(ctx.dir, stage.name);
  const base = roots.get(stage.base.toLowerCase());
  log(`== stage ${stage.name} (line ${stage.line}): FROM ${stage.base}`);
  const state = base
    ? globalThis.structuredClone(ctx.settings.get(stage.base.toLowerCase()))
    : { workdir: '/', env: {}, noted: {} };
  if (base) await cp(base, stage.root, { recursive: true, verbatimSymlinks: true });
  else {
    await mkdir(stage.root, { recursive: true });
    const major = /^node:(\d+)/.exec(stage.base)?.[1];
    if (major && major !== process.versions.node.split('.')[0])
      log(`   note: the image is Node ${major}; this machine's Node ${process.versions.node} stands in for it`);
  }
  for (const step of stage.steps) {
    log(`-- line ${step.line}: ${step.keyword} ${step.args}`);
    if (step.keyword === 'WORKDIR') {
      state.workdir = posix.resolve(state.workdir, step.path);
      await mkdir(inside(stage.root, state.workdir), { recursive: true });
    } else if (step.keyword === 'COPY') await copy(step, stage, state, roots, ctx.context);
    else if (step.keyword === 'ENV') Object.assign(state.env, step.env);
    else if (step.keyword === 'RUN') {
      if (state.noted.USER && !['root', '0'].includes(state.noted.USER))
        throw new DockerfileError(
          `line ${step.line}: RUN after USER runs as ${state.noted.USER} in Docker, not performed here`,
        );
      await run(step.command, inside(stage.root, state.workdir), { ...ctx.hostEnv, ...state.env, PATH: ctx.path });
    } else state.noted[step.keyword] = step.value;
  }
  roots.set(stage.name, stage.root);
  ctx.settings.set(stage.name, state);
}

async function main() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { target: { type: 'string' }, file: { type: 'string' }, context: { type: 'string' } },
  });
  if (positionals.length !== 1)
    throw new DockerfileError('usage: image:build <dir> [--target <stage>] [--file <Dockerfile>] [--context <dir>]');
  // Relative to where the command was typed (npm run moves to the package's folder; INIT_CWD is where it was).
  const cwd = process.env.INIT_CWD ?? process.cwd();
  const dir = resolve(cwd, positionals[0]);
  const context = values.context ? resolve(cwd, values.context) : fileURLToPath(new URL('..', import.meta.url));
  const stages = parseDockerfile(
    await readFile(values.file ? resolve(cwd, values.file) : join(context, 'Dockerfile'), 'utf8'),
  );
  const target = (values.target ?? stages.at(-1).name).toLowerCase();
  if (!stages.some((s) => s.name === target))
    throw new DockerfileError(`no stage ${target} (stages: ${stages.map((s) => s.name).join(', ')})`);
  if ((await readdir(dir).catch(() => [])).length > 0)
    throw new DockerfileError(`${dir} is not empty: give a fresh folder`);
  await mkdir(dir, { recursive: true });

  const shims = await mkdtemp(join(tmpdir(), 'image-build-'));
  try {
    await writeFile(join(shims, 'chown'), CHOWN_NOTED);
    await chmod(join(shims, 'chown'), 0o755);
    const hostEnv = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => PASSED_ENV.includes(k) || PASSED_ENV_PATTERN.test(k)),
    );
    // The lockfile pins every package and its integrity: this machine's npm cache may serve them.
    hostEnv.npm_config_prefer_offline ??= 'true';
    const ctx = { dir, context, hostEnv, path: `${shims}:${process.env.PATH ?? ''}`, settings: new Map() };
    const roots = new Map();
    for (const stage of neededStages(stages, target)) await buildStage(stage, roots, ctx);

    const state = ctx.settings.get(target);
    const folder = inside(roots.get(target), state.workdir);
    const image = { target, root: roots.get(target), workdir: state.workdir, folder, env: state.env, ...state.noted };
    await writeFile(join(dir, `${target}.json`), `${JSON.stringify(image, null, 2)}\n`);
    log(`== ${target} built: settings in ${join(dir, `${target}.json`)}`);
    process.stdout.write(`${folder}\n`);
  } finally {
    await rm(shims, { recursive: true, force: true });
  }
}

try {
  await main();
} catch (err) {
  log(`image:build: ${err instanceof DockerfileError ? '' : 'failed: '}${err.message}`);
  process.exit(1);
}
