import { describe, expect, it } from 'vitest';
import { evaluateGates, verdictOf } from '../../src/ledger/gates.js';
import type { GateFigures } from '../../src/ledger/ledgerQueriesRepo.js';

// The release gates' judgement: every gate passes on clean figures, and each one fails, alone,
// when its own figure is off.

const clean: GateFigures = {
  consent: { reached: 4, withReceipt: 4 },
  completionToVerified: { count: 4, p50: 3, p99: 9 },
  expired: { total: 1, recoverable: 1 },
  crossUserBindings: 0,
  unexpectedCompletions: 0,
  acceptedMoreThanOnce: 0,
  tokensOutsideVault: { tables: 20, found: [] },
};

// A ledger with no flows yet.
const empty: GateFigures = {
  consent: { reached: 0, withReceipt: 0 },
  completionToVerified: { count: 0, p50: null, p99: null },
  expired: { total: 0, recoverable: 0 },
  crossUserBindings: 0,
  unexpectedCompletions: 0,
  acceptedMoreThanOnce: 0,
};

const missed = (f: GateFigures) =>
  evaluateGates(f)
    .filter((g) => !g.pass)
    .map((g) => g.id);

describe('evaluateGates', () => {
  it('passes every gate on clean figures, and on a ledger with no flows yet', () => {
    expect(missed(clean)).toEqual([]);
    expect(missed(empty)).toEqual([]);
  });

  it('says "no data" for a gate with nothing to judge yet, never PASS, and misses nothing for it', () => {
    expect(Object.fromEntries(evaluateGates(empty).map((g) => [g.id, verdictOf(g)]))).toEqual({
      consent_receipts: 'NO DATA',
      completion_p99: 'NO DATA',
      expired_recoverable: 'NO DATA',
      cross_user_bindings: 'PASS',
      unexpected_completions: 'PASS',
      accepted_more_than_once: 'PASS',
    });
    expect(evaluateGates(clean).map(verdictOf)).toEqual(evaluateGates(clean).map(() => 'PASS'));
    // Data that misses is a miss, whatever else is empty.
    const consentMissed = evaluateGates({ ...clean, consent: { reached: 4, withReceipt: 3 } });
    expect(verdictOf(consentMissed.find((g) => g.id === 'consent_receipts')!)).toBe('MISS');
  });

  it.each<[GateResultId, Partial<GateFigures>]>([
    ['consent_receipts', { consent: { reached: 4, withReceipt: 3 } }],
    ['completion_p99', { completionToVerified: { count: 4, p50: 3, p99: 120 } }],
    ['expired_recoverable', { expired: { total: 2, recoverable: 1 } }],
    ['cross_user_bindings', { crossUserBindings: 1 }],
    ['unexpected_completions', { unexpectedCompletions: 1 }],
    ['accepted_more_than_once', { acceptedMoreThanOnce: 1 }],
    ['tokens_outside_vault', { tokensOutsideVault: { tables: 20, found: [{ table: 'notes', rows: 1 }] } }],
  ])('misses %s alone when its figure is off', (id, change) => {
    expect(missed({ ...clean, ...change })).toEqual([id]);
  });

  it('names where tokens were found, and leaves the gate out when none were looked for', () => {
    const found = evaluateGates({
      ...clean,
      tokensOutsideVault: { tables: 20, found: [{ table: 'notes', rows: 2 }] },
    }).find((g) => g.id === 'tokens_outside_vault');
    expect(found).toMatchObject({ figure: '2 (notes: 2)', pass: false });
    // Not looked for (the metrics, the ops page, the CLI without --tokens-file): not judged at all.
    expect(evaluateGates({ ...clean, tokensOutsideVault: undefined }).map((g) => g.id)).not.toContain(
      'tokens_outside_vault',
    );
  });
});

type GateResultId = ReturnType<typeof evaluateGates>[number]['id'];
