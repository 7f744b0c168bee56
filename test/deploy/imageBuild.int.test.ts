import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// scripts/imageBuild.mjs, the Dockerfile performed without Docker (`npm run image:build`), on a
// tiny fixture Dockerfile and context: stage roots, copies from the context and from other stages,
// RUN in WORKDIR with the stage's ENV only, the image's settings, and refusals. The repository's own
// Dockerfile is built by `npm run test:production` (a full npm ci: too slow for this tier).

const script = fileURLToPath(new URL('../../scripts/imageBuild.mjs', import.meta.url));
const run = promisify(execFile);

const FIXTURE = `# A fixture: a build stage, a stage on top of it, and a final stage from copies.
FROM node:20-bookworm-slim AS base
WORKDIR /app
COPY greeting.txt ./
COPY lib ./lib
ENV STAGE_NAME=base
# The host's NODE_ENV (vitest's "test") must not reach a RUN step; the stage's ENV must.
RUN test -z "$NODE_ENV" && mkdir made && \\
    echo "built in $STAGE_NAME" > made/by-run.txt

FROM base AS extended
RUN echo extended >> greeting.txt

FROM node:20-bookworm-slim AS final
ENV NODE_ENV=production
WORKDIR /srv
COPY --from=base /app/lib ./lib
COPY --from=base /app/made/by-run.txt ./
COPY --chown=node:node greeting.txt notes/
WORKDIR /
RUN mkdir data && chown node:node data
WORKDIR /srv
USER node
EXPOSE 8443
CMD ["node", "lib/main.js"]
`;

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

async function imageBuild(args: string[]): Promise<Outcome> {
  try {
    const { stdout, stderr } = await run(process.execPath, [script, ...args], { timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const failed = err as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('scripts/imageBuild.mjs', () => {
  let work: string;
  let context: string;
  let fresh = 0;
  const out = () => join(work, `out-${++fresh}`);
  const dockerfile = async (text: string) => {
    const file = join(work, `Dockerfile.${++fresh}`);
    await writeFile(file, text);
    return file;
  };

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'image-build-test-'));
    context = join(work, 'context');
    await mkdir(join(context, 'lib'), { recursive: true });
    await writeFile(join(context, 'greeting.txt'), 'hello\n');
    await writeFile(join(context, 'lib/main.js'), "process.stdout.write('running from the image folder\\n');\n");
    await writeFile(join(context, 'Dockerfile'), FIXTURE);
    await writeFile(join(work, 'outside.txt'), 'not in the context\n');
  });
  afterAll(async () => {
    await rm(work, { recursive: true, force: true });
  });

  it('builds the last stage by default from copies of the context and of the stages it needs, and prints its folder', async () => {
    const dir = out();
    const result = await imageBuild([dir, '--context', context]);
    expect(result.stderr).not.toContain('image:build:');
    expect(result.code).toBe(0);
    const folder = join(dir, 'final', 'srv');
    expect(result.stdout.trim().split('\n').at(-1)).toBe(folder);
    expect(await readFile(join(folder, 'lib/main.js'), 'utf8')).toContain('running from the image folder');
    // The RUN step ran in base's WORKDIR with base's ENV, and its output was copied across.
    expect(await readFile(join(folder, 'by-run.txt'), 'utf8')).toBe('built in base\n');
    expect(await readFile(join(folder, 'notes/greeting.txt'), 'utf8')).toBe('hello\n');
    expect((await stat(join(dir, 'final', 'data'))).isDirectory()).toBe(true);
    expect(result.stderr).toContain('chown node:node data (noted, not performed here)');
    expect(result.stderr).toContain('--chown=node:node noted');
    // A stage the target does not need is not built.
    await expect(stat(join(dir, 'extended'))).rejects.toThrow(/ENOENT/);
    // What runs from the folder is what was copied there.
    const started = await run(process.execPath, ['lib/main.js'], { cwd: folder });
    expect(started.stdout).toBe('running from the image folder\n');
  });

  it("writes the target's settings: its ENV, WORKDIR, USER, EXPOSE and CMD", async () => {
    const dir = out();
    expect((await imageBuild([dir, '--context', context, '--target', 'final'])).code).toBe(0);
    const image = JSON.parse(await readFile(join(dir, 'final.json'), 'utf8')) as Record<string, unknown>;
    expect(image).toEqual({
      target: 'final',
      root: join(dir, 'final'),
      workdir: '/srv',
      folder: join(dir, 'final', 'srv'),
      env: { NODE_ENV: 'production' },
      USER: 'node',
      EXPOSE: '8443',
      CMD: ['node', 'lib/main.js'],
    });
  });

  it('builds a stage on top of another from a copy of its root, leaving the first as it was', async () => {
    const dir = out();
    const result = await imageBuild([dir, '--context', context, '--target', 'extended']);
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe(join(dir, 'extended', 'app'));
    expect(await readFile(join(dir, 'extended/app/greeting.txt'), 'utf8')).toBe('hello\nextended\n');
    expect(await readFile(join(dir, 'base/app/greeting.txt'), 'utf8')).toBe('hello\n');
    await expect(stat(join(dir, 'final'))).rejects.toThrow(/ENOENT/);
  });

  it.each([
    ['ARG VERSION=1', 'line 2: ARG is not an instruction this build knows'],
    ['ADD https://example.com/x.tgz ./', 'line 2: ADD is not an instruction this build knows'],
    ['RUN mkdir /data', 'line 2: RUN: an absolute path (mkdir /data) is not performed here'],
    ['RUN ["sh", "-c", "true"]', 'line 2: RUN: only the plain shell form is performed here'],
    ['COPY --chmod=644 greeting.txt ./', 'line 2: COPY: the flag --chmod is not one this build knows'],
  ])('refuses %s before performing any step, naming its line', async (instruction, message) => {
    const dir = out();
    const file = await dockerfile(`FROM node:20-bookworm-slim AS only\n${instruction}\nRUN touch ran\n`);
    const result = await imageBuild([dir, '--context', context, '--file', file]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(message);
    expect(result.stdout).toBe('');
    await expect(stat(join(dir, 'only'))).rejects.toThrow(/ENOENT/);
  });

  it('fails when a RUN step fails, printing no folder', async () => {
    const dir = out();
    const file = await dockerfile('FROM node:20-bookworm-slim AS only\nWORKDIR /app\nRUN exit 3\nRUN touch after\n');
    const result = await imageBuild([dir, '--context', context, '--file', file]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('RUN exit 3 failed (exit 3)');
    expect(result.stdout).toBe('');
    await expect(stat(join(dir, 'only/app/after'))).rejects.toThrow(/ENOENT/);
  });

  it('refuses a COPY from outside the build context', async () => {
    const file = await dockerfile('FROM node:20-bookworm-slim AS only\nCOPY ../outside.txt ./\n');
    const result = await imageBuild([out(), '--context', context, '--file', file]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('line 2: COPY ../outside.txt is outside the build context');
  });

  it('refuses a RUN after USER, which Docker runs as that user', async () => {
    const file = await dockerfile('FROM node:20-bookworm-slim AS only\nUSER node\nRUN touch mine\n');
    const result = await imageBuild([out(), '--context', context, '--file', file]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('line 3: RUN after USER runs as node in Docker, not performed here');
  });

  it('refuses a folder that is not empty', async () => {
    const dir = out();
    await mkdir(dir);
    await writeFile(join(dir, 'left.txt'), 'from before\n');
    const result = await imageBuild([dir, '--context', context]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('is not empty: give a fresh folder');
  });
});
