import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';
import { navigationStates } from '../../src/flow/navigationStates.js';

// The repository's own ESLint configuration, run through ESLint's Node API: a state spelled as a
// literal in src/ fails `npm run lint`, except in the state machine's module.
const root = fileURLToPath(new URL('../..', import.meta.url));
const eslint = new ESLint({ cwd: root });
const RULE = 'broker/no-state-literals';

const stateErrors = async (code: string, file = 'src/broker/planted.ts') => {
  const [result] = await eslint.lintText(code, { filePath: join(root, file) });
  return result!.messages.filter((m) => m.ruleId === RULE).map((m) => m.message.split(':')[0]);
};

// Loading the configuration and TypeScript's parser takes a second or two, more on a busy machine.
describe('the lint rule that keeps navigation states in their module', { timeout: 30_000 }, () => {
  it('refuses a state compared as a string and a state written into SQL', async () => {
    const planted = [
      "export const isExpired = (status: string) => status === 'EXPIRED';",
      "export const sql = `SELECT id FROM elicitation_navigations WHERE status IN ('USER_REVIEW', 'OPERATION_REJECTED')`;",
    ].join('\n');
    expect(await stateErrors(planted)).toEqual([
      'EXPIRED is a navigation state',
      'USER_REVIEW is a navigation state',
      'OPERATION_REJECTED is a navigation state',
    ]);
  });

  it('knows every state of the transition table', async () => {
    for (const state of navigationStates)
      expect(await stateErrors(`export const s = '${state}';`), state).toEqual([`${state} is a navigation state`]);
  });

  it('refuses them in every folder of src/', async () => {
    for (const file of ['src/ops/planted.ts', 'src/ledger/plantedRepo.ts', 'src/metrics/planted.ts'])
      expect(await stateErrors("export const s = 'CREATED';", file), file).toHaveLength(1);
  });

  it('leaves comments, other words and names through the module alone', async () => {
    const clean = [
      "import { State } from './navigationStates.js';",
      '// A flow that is EXPIRED is closed.',
      "export const code = 'TOKEN_EXPIRED';",
      'export const help = `Seconds until ${State.REQUIREMENT_VERIFIED}.`;',
    ].join('\n');
    expect(await stateErrors(clean)).toEqual([]);
  });

  it('lets the state machine module itself name the states', async () => {
    const [result] = await eslint.lintFiles([join(root, 'src/flow/navigationStates.ts')]);
    expect(result!.messages).toEqual([]);
  });

  it('finds no state literal anywhere in src/ beside the module', async () => {
    const results = await eslint.lintFiles([join(root, 'src')]);
    const hits = results.flatMap((r) =>
      r.messages.filter((m) => m.ruleId === 'broker/no-state-literals').map((m) => `${r.filePath}:${m.line}`),
    );
    expect(hits).toEqual([]);
  });
});
