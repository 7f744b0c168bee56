import type { TokenScan } from './gateScanRepo.js';
import type { GateFigures } from './ledgerQueriesRepo.js';

export interface GateResult {
  /** A stable identifier (metrics label): the `gate` text may be reworded. */
  id:
    | 'consent_receipts'
    | 'completion_p99'
    | 'expired_recoverable'
    | 'cross_user_bindings'
    | 'unexpected_completions'
    | 'accepted_more_than_once'
    | 'tokens_outside_vault';
  gate: string;
  figure: string;
  target: string;
  /** Not missed: a gate with no data yet passes (nothing to judge), and says so (`noData`). */
  pass: boolean;
  /** Nothing to judge yet (no flow reached the step it is about): shown as "no data", not PASS. */
  noData: boolean;
}

/** A gate's verdict as people read it, on the pages and in the CLI. */
export type GateVerdict = 'PASS' | 'MISS' | 'NO DATA';
export const verdictOf = (g: Pick<GateResult, 'pass' | 'noData'>): GateVerdict =>
  !g.pass ? 'MISS' : g.noData ? 'NO DATA' : 'PASS';

const RECONCILIATION_P99_SECONDS = 120;

/** The release gates, judged on live figures: each has a stable id, a figure, a target and whether it passes. */
export function evaluateGates(f: GateFigures): GateResult[] {
  const pct = (part: number, whole: number) =>
    whole === 0 ? 'none yet' : `${((part / whole) * 100).toFixed(1)}% (${part}/${whole})`;
  const seconds = (s: number | null) => (s === null ? 'n/a' : `${s.toFixed(2)} s`);
  return [
    {
      id: 'consent_receipts',
      gate: 'navigations with a consent receipt',
      figure: pct(f.consent.withReceipt, f.consent.reached),
      target: '100%',
      pass: f.consent.withReceipt === f.consent.reached,
      noData: f.consent.reached === 0,
    },
    {
      id: 'completion_p99',
      gate: 'completion → verified p50 / p99',
      figure: `${seconds(f.completionToVerified.p50)} / ${seconds(f.completionToVerified.p99)} (n=${f.completionToVerified.count})`,
      target: `p99 < ${RECONCILIATION_P99_SECONDS} s`,
      pass: f.completionToVerified.p99 === null || f.completionToVerified.p99 < RECONCILIATION_P99_SECONDS,
      noData: f.completionToVerified.p99 === null,
    },
    {
      id: 'expired_recoverable',
      gate: 'expired flows recoverable',
      figure: pct(f.expired.recoverable, f.expired.total),
      target: '100%',
      pass: f.expired.recoverable === f.expired.total,
      noData: f.expired.total === 0,
    },
    {
      id: 'cross_user_bindings',
      gate: 'cross-user bindings',
      figure: String(f.crossUserBindings),
      target: '0',
      pass: f.crossUserBindings === 0,
      // A count: 0 is a figure, whatever the traffic.
      noData: false,
    },
    {
      id: 'unexpected_completions',
      gate: 'completions that advanced a flow out of order',
      figure: String(f.unexpectedCompletions),
      target: '0',
      pass: f.unexpectedCompletions === 0,
      // A count: 0 is a figure, whatever the traffic.
      noData: false,
    },
    {
      id: 'accepted_more_than_once',
      gate: 'operations accepted more than once across lineages',
      figure: String(f.acceptedMoreThanOnce),
      target: '0',
      pass: f.acceptedMoreThanOnce === 0,
      // A count: 0 is a figure, whatever the traffic.
      noData: false,
    },
    ...(f.tokensOutsideVault ? [tokensGate(f.tokensOutsideVault)] : []),
  ];
}

// Judged only when the caller had tokens to look for (`broker ledger gates --tokens-file`, the gates
// suite): without them there is nothing to find, and a 0 would claim a search that never happened.
function tokensGate(scan: TokenScan): GateResult {
  const rows = scan.found.reduce((n, f) => n + f.rows, 0);
  const where = scan.found.map((f) => `${f.table}: ${f.rows}`).join(', ');
  return {
    id: 'tokens_outside_vault',
    gate: 'third-party tokens outside the vault (database)',
    figure: rows === 0 ? `0 (${scan.tables} tables read)` : `${rows} (${where})`,
    target: '0',
    pass: rows === 0,
    noData: false,
  };
}
