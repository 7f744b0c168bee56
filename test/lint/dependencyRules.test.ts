import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify, stripVTControlCharacters } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The dependency rules of .dependency-cruiser.cjs, as `npm run lint` runs them: a planted cycle,
// also through a type-only import, planted folder edges against the folders' order, production code
// importing a devDependency and production code importing src/dev/ statically fail; a tree whose
// production code loads src/dev/ by dynamic import passes, as does the repository's own src/.

const root = fileURLToPath(new URL('../..', import.meta.url));

// Planted imports against the folder order: [importer, imported] under a planted src/.
const BACK_ARROWS = [
  ['notes/note.ts', 'mcp/protocol.ts'],
  ['providers/providerConfig.ts', 'upstream/upstreamEntry.ts'],
  ['broker/brokerDeps.ts', 'upstream/upstreamClient.ts'],
  ['events/webhookDelivery.ts', 'jobs/periodic.ts'],
  ['metrics/pinMetrics.ts', 'upstream/issuerPinsRepo.ts'],
  ['config/config.ts', 'web/middleware/rateLimit.ts'],
  ['telemetry/flowSpan.ts', 'flow/navigationRecord.ts'],
  ['server.ts', 'cli/broker.ts'],
] as const;
const run = promisify(execFile);

async function depcruise(target: string): Promise<{ code: number; output: string }> {
  try {
    const { stdout } = await run(
      join(root, 'node_modules/.bin/depcruise'),
      [target, '--config', '.dependency-cruiser.cjs', '--output-type', 'err'],
      // CI may force colours (FORCE_COLOR); the rule names are asserted on plain text.
      { cwd: root, env: { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1' } },
    );
    return { code: 0, output: stripVTControlCharacters(stdout) };
  } catch (err) {
    const failed = err as { code: number; stdout: string };
    return { code: failed.code, output: stripVTControlCharacters(failed.stdout) };
  }
}

describe('the dependency rules', () => {
  let planted: string;
  let kept: string;
  beforeAll(async () => {
    planted = await mkdtemp(join(root, 'test/lint/planted-'));
    kept = await mkdtemp(join(root, 'test/lint/planted-'));
    await writeFile(
      join(planted, 'registry.ts'),
      "import { tool } from './tool.js';\nexport interface Deps { pool: string }\nexport const tools = [tool];\n",
    );
    // Only a type comes back, and it still closes the cycle.
    await writeFile(
      join(planted, 'tool.ts'),
      "import type { Deps } from './registry.js';\nexport const tool = (deps: Deps) => deps.pool;\n",
    );
    // Folder edges the order forbids: a domain (notes/) importing the transport (mcp/), and the
    // arrows that once ran back up (each from a folder to one above it).
    for (const [from, to] of BACK_ARROWS) {
      await mkdir(join(planted, 'src', dirname(from)), { recursive: true });
      await mkdir(join(planted, 'src', dirname(to)), { recursive: true });
      await writeFile(join(planted, 'src', to), 'export const VALUE = 1;\n');
      await writeFile(
        join(planted, 'src', from),
        `import { VALUE } from '${relative(dirname(from), to)
          .replace(/^(?!\.)/, './')
          .replace(/\.ts$/, '.js')}';\nexport const value = VALUE;\n`,
      );
    }
    // Production code importing a devDependency (nock): a production install has no nock.
    await mkdir(join(planted, 'src/upstream'), { recursive: true });
    await writeFile(
      join(planted, 'src/upstream/upstreamProbe.ts'),
      "import nock from 'nock';\nexport const probe = () => nock.isDone();\n",
    );
    // Production code importing the development stack statically.
    await mkdir(join(planted, 'src/dev'), { recursive: true });
    await mkdir(join(planted, 'src/cli'), { recursive: true });
    await writeFile(join(planted, 'src/dev/devUsers.ts'), "export const DEV_PASSWORD = 'x';\n");
    await writeFile(
      join(planted, 'src/cli/devCommand.ts'),
      "import { DEV_PASSWORD } from '../dev/devUsers.js';\nexport const password = DEV_PASSWORD;\n",
    );
    // A tree that keeps the rules: main loads src/dev/ by dynamic import, src/dev/ may import a
    // devDependency, and a type-only import of one (erased at compile time) is allowed anywhere.
    await mkdir(join(kept, 'src/dev'), { recursive: true });
    await mkdir(join(kept, 'src/upstream'), { recursive: true });
    await writeFile(
      join(kept, 'src/dev/devStack.ts'),
      "import nock from 'nock';\nexport const start = () => nock.isDone();\n",
    );
    await writeFile(
      join(kept, 'src/upstream/upstreamScope.ts'),
      "import type { Scope } from 'nock';\nexport type UpstreamScope = Scope;\n",
    );
    await writeFile(
      join(kept, 'src/main.ts'),
      "export async function main(dev: boolean): Promise<void> {\n  if (dev) (await import('./dev/devStack.js')).start();\n}\n",
    );
  });
  afterAll(async () => {
    await rm(planted, { recursive: true, force: true });
    await rm(kept, { recursive: true, force: true });
  });

  it('refuses an import cycle, also through a type-only import', async () => {
    const result = await depcruise(planted);
    expect(result.code).not.toBe(0);
    expect(result.output).toMatch(/no-circular: .*registry\.ts/);
    // A child process that loads dependency-cruiser: seconds on a busy machine, as for src/ below.
  }, 60_000);

  it("refuses an import against the folder order, naming the importing folder's rule", async () => {
    const result = await depcruise(planted);
    for (const [from, to] of BACK_ARROWS) {
      const rule = from.includes('/') ? `layer-${from.split('/')[0]}` : 'layer-root';
      expect(result.output).toContain(`${rule}: ${join(planted, 'src', from).slice(root.length)} → `);
      expect(result.output).toMatch(
        new RegExp(`src/${from.replace(/\./g, '\\.')} → .*src/${to.replace(/\./g, '\\.')}`),
      );
    }
  }, 60_000);

  it('refuses production code importing a devDependency, naming the rule', async () => {
    const result = await depcruise(planted);
    expect(result.code).not.toBe(0);
    expect(result.output).toMatch(/production-not-dev-dependency: .*src\/upstream\/upstreamProbe\.ts → .*nock/);
  }, 60_000);

  it('refuses a static import of src/dev/ from production code, naming the rule', async () => {
    const result = await depcruise(planted);
    expect(result.output).toMatch(/production-not-dev: .*src\/cli\/devCommand\.ts → .*src\/dev\/devUsers\.ts/);
  }, 60_000);

  it('passes a dynamic import of src/dev/ from main, and a devDependency imported by src/dev/ or for types', async () => {
    const result = await depcruise(kept);
    expect(result.output).toContain('no dependency violations found');
    expect(result.code).toBe(0);
  }, 60_000);

  it('finds no cycle and no folder edge against its direction in src/', async () => {
    const result = await depcruise('src');
    expect(result.output).toContain('no dependency violations found');
    expect(result.code).toBe(0);
  }, 60_000);
});
