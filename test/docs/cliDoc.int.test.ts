import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../support/brokerProcess.js';

// docs/cli.md is the CLI's own help, written by scripts/cli-doc.sh: a command or option changed in
// code and not in the page fails here (run `bash scripts/cli-doc.sh` to write it again).
describe('docs/cli.md', () => {
  it('is what scripts/cli-doc.sh writes from the commands as they are', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cli-doc-'));
    try {
      const fresh = join(dir, 'cli.md');
      execFileSync('bash', ['scripts/cli-doc.sh', fresh], { cwd: repoRoot, env: { PATH: process.env['PATH'] ?? '' } });
      expect(await readFile(join(repoRoot, 'docs', 'cli.md'), 'utf8')).toBe(await readFile(fresh, 'utf8'));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
