import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';
import { connectionStates } from '../../src/secrets/connectionStates.js';

// The repository's own ESLint configuration, run through ESLint's Node API: a connection state
// compared as a string with a `.state`, or written into SQL against a `state` column, fails
// `npm run lint` outside src/secrets/connectionStates.ts. The names are ordinary words, so the same
// words used otherwise pass.
const root = fileURLToPath(new URL('../..', import.meta.url));
const eslint = new ESLint({ cwd: root });
const RULE = 'broker/no-connection-state-literals';

const stateErrors = async (code: string, file = 'src/web/planted.ts') => {
  const [result] = await eslint.lintText(code, { filePath: join(root, file) });
  return result!.messages.filter((m) => m.ruleId === RULE).map((m) => m.message.split(' is ')[0]);
};

describe('the lint rule that keeps connection states in their module', { timeout: 30_000 }, () => {
  it('refuses a state compared with a .state, and states written into SQL', async () => {
    const planted = [
      "export const gone = (c: { state: string }) => c.state === 'revoked' || 'needs_reauth' !== c.state;",
      "export const sql = `SELECT id FROM connections WHERE state IN ('active', 'refreshing') OR state = 'revoked'`;",
      "export const other = 'UPDATE connections SET state = \\'needs_reauth\\' WHERE id = $1';",
    ].join('\n');
    expect(await stateErrors(planted)).toEqual([
      "'revoked'",
      "'needs_reauth'",
      "'active'",
      "'refreshing'",
      "'revoked'",
      "'needs_reauth'",
    ]);
  });

  it('knows every state of the table', async () => {
    for (const state of connectionStates)
      expect(await stateErrors(`export const s = (c: { state: string }) => c.state !== '${state}';`), state).toEqual([
        `'${state}'`,
      ]);
  });

  it('leaves the same words alone where they are no connection state', async () => {
    const clean = [
      "export const outcome = (r: { outcome: string }) => r.outcome === 'revoked';",
      "export const label = 'active';",
      "export const sql = 'SELECT status FROM webhooks WHERE status = \\'active\\'';",
      "import { disconnectedState } from '../secrets/connectionStates.js';",
      'export const done = (c: { state: string }) => c.state === disconnectedState;',
    ].join('\n');
    expect(await stateErrors(clean)).toEqual([]);
  });

  it('finds no connection state literal anywhere in src/ beside the module', async () => {
    const results = await eslint.lintFiles([join(root, 'src')]);
    const hits = results.flatMap((r) =>
      r.messages.filter((m) => m.ruleId === RULE).map((m) => `${r.filePath}:${m.line}`),
    );
    expect(hits).toEqual([]);
  });
});
