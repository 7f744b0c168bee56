import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify, stripVTControlCharacters } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The dependency rules of .dependency-cruiser.cjs, as `npm run lint` runs them: a planted cycle,
// also through a type-only import, and a planted folder edge against its direction fail; the
// repository's own src/ passes.

const root = fileURLToPath(new URL('../..', import.meta.url));
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
  beforeAll(async () => {
    planted = await mkdtemp(join(root, 'test/lint/planted-'));
    await writeFile(
      join(planted, 'registry.ts'),
      "import { tool } from './tool.js';\nexport interface Deps { pool: string }\nexport const tools = [tool];\n",
    );
    // Only a type comes back, and it still closes the cycle.
    await writeFile(
      join(planted, 'tool.ts'),
      "import type { Deps } from './registry.js';\nexport const tool = (deps: Deps) => deps.pool;\n",
    );
    // A folder edge the rules forbid: a domain (notes/) importing the transport (mcp/).
    await mkdir(join(planted, 'src/notes'), { recursive: true });
    await mkdir(join(planted, 'src/mcp'), { recursive: true });
    await writeFile(join(planted, 'src/mcp/protocol.ts'), 'export const VERSION = 1;\n');
    await writeFile(
      join(planted, 'src/notes/note.ts'),
      "import { VERSION } from '../mcp/protocol.js';\nexport const note = VERSION;\n",
    );
  });
  afterAll(async () => {
    await rm(planted, { recursive: true, force: true });
  });

  it('refuses an import cycle, also through a type-only import', async () => {
    const result = await depcruise(planted);
    expect(result.code).not.toBe(0);
    expect(result.output).toMatch(/no-circular: .*registry\.ts/);
    // A child process that loads dependency-cruiser: seconds on a busy machine, as for src/ below.
  }, 60_000);

  it('refuses an import against a folder direction, naming the rule', async () => {
    const result = await depcruise(planted);
    expect(result.output).toMatch(/notes-not-mcp: .*src\/notes\/note\.ts → .*src\/mcp\/protocol\.ts/);
  }, 60_000);

  it('finds no cycle and no folder edge against its direction in src/', async () => {
    const result = await depcruise('src');
    expect(result.output).toContain('no dependency violations found');
    expect(result.code).toBe(0);
  }, 60_000);
});
