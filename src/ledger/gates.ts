import type { GateFigures } from './ledgerQueriesRepo.js';

export interface GateResult {
  /** A stable identifier (metrics label): the `gate` text may be reworded. */
  id: 'consent_receipts' | 'completion_p99' | 'expired_recoverable' | 'cross_user_bindings' | 'unexpected_completions';
  gate: string;
  figure: string;
  target: string;
  pass: boolean;
}

const RECONCILIATION_P99_SECONDS = 120;

/** The release gates, judged on live figures: each has a stable id, a figure, a target and whether it passes. */
export function evaluateGates(f: GateFigures): GateResult[] {
  const pct = (part: number, whole: number) =>
    whole === 0 ? 'n/a (none yet)' : `${((part / whole) * 100).toFixed(1)}% (${part}/${whole})`;
  const seconds = (s: number | null) => (s === null ? 'n/a' : `${s.toFixed(2)} s`);
  return [
    {
      id: 'consent_receipts',
      gate: 'navigations with a consent receipt',
      figure: pct(f.consent.withReceipt, f.consent.reached),
      target: '100%',
      pass: f.consent.withReceipt === f.consent.reached,
    },
    {
      id: 'completion_p99',
      gate: 'completion → verified p50 / p99',
      figure: `${seconds(f.completionToVerified.p50)} / ${seconds(f.completionToVerified.p99)} (n=${f.completionToVerified.count})`,
      target: `p99 < ${RECONCILIATION_P99_SECONDS} s`,
      pass: f.completionToVerified.p99 === null || f.completionToVerified.p99 < RECONCILIATION_P99_SECONDS,
    },
    {
      id: 'expired_recoverable',
      gate: 'expired flows recoverable',
      figure: pct(f.expired.recoverable, f.expired.total),
      target: '100%',
      pass: f.expired.recoverable === f.expired.total,
    },
    {
      id: 'cross_user_bindings',
      gate: 'cross-user bindings',
      figure: String(f.crossUserBindings),
      target: '0',
      pass: f.crossUserBindings === 0,
    },
    {
      id: 'unexpected_completions',
      gate: 'completions that advanced a flow out of order',
      figure: String(f.unexpectedCompletions),
      target: '0',
      pass: f.unexpectedCompletions === 0,
    },
  ];
}
